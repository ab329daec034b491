package cluster

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/csi"
)

// WriterStatefulSet is statefulSet with a ReadWriteOnce claim "data" of
// the harness's CSI StorageClass, mounted at /data, where the pod writes
// /data/log (test/pause's writer).
func WriterStatefulSet(t *testing.T, cp *harness.ControlPlane, name, prefer string) {
	t.Helper()
	StatefulSetWith(t, cp, name, prefer, func(s *appsv1.StatefulSet) {
		c := &s.Spec.Template.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "WRITE_TO", Value: "/data/log"},
			{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To(csi.StorageClass),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}}
	})
}

// WrittenLine is one line of test/pause's writer.
type WrittenLine struct {
	Text string
	At   time.Time
}

// LinesOf are the lines of path that pod uid wrote.
func LinesOf(t *testing.T, path, uid string) []WrittenLine {
	t.Helper()
	raw, _ := os.ReadFile(path)
	var out []WrittenLine
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != uid {
			continue
		}
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("a line of %s: %q", path, l)
		}
		out = append(out, WrittenLine{Text: l, At: time.Unix(0, ns)})
	}
	return out
}
