package hangwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/test/harness"
)

var (
	remedyOnce sync.Once
	remedyBin  string
	remedyErr  error
	// remedyKubeconfig is remedyIdentity's, made once for the package.
	remedyKubeconfig struct {
		once sync.Once
		path string
	}
)

// RemedyBinary builds hangwatch-remedy once for the package.
func RemedyBinary(t *testing.T) string {
	t.Helper()
	remedyOnce.Do(func() {
		remedyBin = filepath.Join(workDir, "hangwatch-remedy")
		remedyErr = goBuild(remedyBin, "./cmd/hangwatch-remedy")
	})
	if remedyErr != nil {
		t.Fatal(remedyErr)
	}
	return remedyBin
}

// Remedy is one hangwatch-remedy replica (a Proc) and its /metrics.
type Remedy struct {
	*harness.Proc
	Metrics string
}

// StartRemedy starts a replica with the Lease kube-system/<lease>; only
// "hangwatch-remedy" is one the manifests' Role lets it take.
func StartRemedy(t *testing.T, kubeconfig, policy, lease string) *Remedy {
	t.Helper()
	addr := harness.FreeAddr(t)
	p := harness.StartProc(t, "hangwatch-remedy", harness.ProcOptions{Grace: time.Minute}, RemedyBinary(t), "run", "--kubeconfig", kubeconfig,
		"--config", policy, "--listen-address", addr, "--namespace", "kube-system", "--leader-elect-lease-name", lease,
		"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms", "-v", "2")
	return &Remedy{Proc: p, Metrics: "http://" + addr + "/metrics"}
}

// Metric reads one series of the replica's /metrics; -1 when absent.
func (p *Remedy) Metric(series string) float64 {
	_, body, err := harness.Get(p.Metrics)
	if err != nil {
		return -1
	}
	return harness.MetricValue(body, series)
}

// WriteCondition writes condType on the Node name as its writer manager
// does (a status patch under that field manager), with the writer's times.
func WriteCondition(ctx context.Context, cs kubernetes.Interface, name, condType, manager string, status corev1.ConditionStatus, transition, beat time.Time) error {
	cond := corev1.NodeCondition{Type: corev1.NodeConditionType(condType), Status: status, Reason: "VersionHung", Message: "set by the test",
		LastTransitionTime: metav1.NewTime(transition.Truncate(time.Second)), LastHeartbeatTime: metav1.NewTime(beat.Truncate(time.Second))}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: manager}, "status")
	return err
}

func WritePolicy(t *testing.T, path, label, extra string) {
	t.Helper()
	body := fmt.Sprintf(`apiVersion: hangwatch.io/v1alpha1
kind: RemedyConfiguration
nodeSelector: hangwatch.io/remedy-test=%s
conditions:
- type: RuntimeHung
  taintAfter: 0s
  clearAfter: 2s
%s`, label, extra)
	if err := os.WriteFile(path+".tmp", []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}
