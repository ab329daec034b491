package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/fence"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
	"github.com/hangwatch/hangwatch/test/harness/csi"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// elsewherePlugin is a node instance of the harness's CSI driver serving
// its socket in a directory of its own (not <root>/plugins/<driver>/csi.sock)
// and the registrar that registers that endpoint through the kubelet's
// plugins_registry.
type elsewherePlugin struct {
	calls     string // the node instance's call log
	registrar *testProcess
	// startRegistrar starts a registrar (again).
	startRegistrar func() *testProcess
	regSocket      string
}

// startNodePluginElsewhere starts the node instance and registrar for
// node, whose kubelet's root directory is root, and waits for the Node's
// CSINode to list the driver.
func startNodePluginElsewhere(t *testing.T, cp *harness.ControlPlane, driver *csi.Driver, node, root string) *elsewherePlugin {
	t.Helper()
	dir, err := os.MkdirTemp("", "hwcsi-else-") // short: a socket's path fits sun_path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin, sock := filepath.Join(driver.Dir, "csidriver"), filepath.Join(dir, "node.sock")
	e := &elsewherePlugin{calls: filepath.Join(dir, "calls.jsonl"), regSocket: filepath.Join(root, "plugins_registry", csi.DriverName+"-reg.sock")}
	plugin := startTestProcess(t, dir, "node", bin, "-mode=node", "-endpoint="+sock, "-name="+csi.DriverName,
		"-node-id="+node, "-data-dir="+driver.DataDir, "-calls="+e.calls)
	e.startRegistrar = func() *testProcess {
		return startTestProcess(t, dir, "registrar", bin, "-mode=registrar", "-endpoint="+sock, "-registration-socket="+e.regSocket)
	}
	e.registrar = e.startRegistrar()
	harness.Eventually(t, 90*time.Second, "node "+node+"'s CSINode to list "+csi.DriverName, func() bool {
		cn, err := cp.Admin.StorageV1().CSINodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == csi.DriverName && d.NodeID == node {
				return true
			}
		}
		return false
	}, harness.Explaining(func() string { return plugin.tail() + "\n" + e.registrar.tail() }))
	return e
}

// unregister stops the registrar, which removes its socket.
func (e *elsewherePlugin) unregister(t *testing.T) {
	t.Helper()
	e.registrar.stop()
	if _, err := os.Stat(e.regSocket); err == nil {
		t.Fatalf("the stopped registrar left %s", e.regSocket)
	}
}

// register starts a registrar again and waits for its socket.
func (e *elsewherePlugin) register(t *testing.T) {
	t.Helper()
	e.registrar = e.startRegistrar()
	harness.Eventually(t, 30*time.Second, "the registrar's socket", func() bool {
		fi, err := os.Stat(e.regSocket)
		return err == nil && fi.Mode().Type() == os.ModeSocket
	}, harness.Explaining(e.registrar.tail))
}

// testProcess is a process a test started, logging to a file.
type testProcess struct {
	cmd  *exec.Cmd
	log  string
	stop func() // SIGTERM, then SIGKILL after 5 s, by its PID; once
}

// startTestProcess starts bin with args, its output in dir/<name>.log,
// and stops it when t ends.
func startTestProcess(t *testing.T, dir, name, bin string, args ...string) *testProcess {
	t.Helper()
	p := &testProcess{cmd: exec.Command(bin, args...), log: filepath.Join(dir, name+".log")}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = out.Close()
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = p.cmd.Process.Kill()
				<-exited
			}
		})
	}
	t.Cleanup(p.stop)
	return p
}

func (p *testProcess) tail() string {
	raw, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}

// runPodWithVolume runs pod "user" of pause on node with a ReadWriteOnce
// claim of the harness's CSI StorageClass at /data, a memory emptyDir at
// /cache and a subPath of a disk emptyDir at /scratch (a bind mount of the
// node's own disk), and returns the pod once Running and its PV's name.
func runPodWithVolume(t *testing.T, cp *harness.ControlPlane, node string) (*corev1.Pod, string) {
	t.Helper()
	ctx := context.Background()
	hangwatch.EnsureDefaultServiceAccount(t, cp, "default")
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(csi.StorageClass),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}
	if _, err := cp.Admin.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "default"}, Spec: corev1.PodSpec{
		NodeName: node, AutomountServiceAccountToken: ptr.To(false), HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{Name: "pause", Image: harness.PauseImage, ImagePullPolicy: corev1.PullNever,
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "cache", MountPath: "/cache"},
				{Name: "scratch", MountPath: "/scratch", SubPath: "sub"}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	if _, err := cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var p *corev1.Pod
	harness.Eventually(t, 3*time.Minute, "pod user Running on "+node, func() bool {
		var err error
		p, err = cp.Admin.CoreV1().Pods("default").Get(ctx, "user", metav1.GetOptions{})
		return err == nil && cluster.PodRunning(*p)
	})
	claim, err := cp.Admin.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p, claim.Spec.VolumeName
}

// stagingOf is the staging mount point rec recorded (one).
func stagingOf(t *testing.T, rec fence.VolumeRecord) string {
	t.Helper()
	for _, vm := range rec.Mounts {
		if vm.Staging {
			return vm.MountPoint
		}
	}
	t.Fatalf("no staging mount recorded in %+v", rec.Mounts)
	return ""
}

// holder is a process in a mount namespace of its own that holds a volume
// at dir.
type holder struct {
	pid  int
	dir  string
	stop func()
}

// holdElsewhere starts a sleeping process in a new mount namespace
// (private propagation) that binds target on a directory of its own and
// then unmounts its copies of every mount under the pod's directory and of
// staging: it holds the volume at that directory only, as a shell that
// joined a container's namespace holds it at /data.
func holdElsewhere(t *testing.T, podDir, target, staging string) *holder {
	t.Helper()
	h := &holder{dir: t.TempDir()}
	script := `mount --bind "$1" "$2" || exit 1
for m in $(awk -v p="$3/" 'index($5, p) == 1 {print $5}' /proc/self/mountinfo | sort -r) "$4"; do umount "$m" || exit 1; done
echo held && exec sleep 600`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", target, h.dir, podDir, staging)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.pid = cmd.Process.Pid
	exited := make(chan struct{})
	h.stop = func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if line != "held\n" {
		t.Fatalf("the holder did not hold %s at %s (%q)", target, h.dir, line)
	}
	return h
}

// killPod kills every process of the pod's cgroups as the fence does.
func killPod(t *testing.T, uid string) {
	t.Helper()
	h, err := fence.DetectHierarchy("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	groups, err := h.PodCgroups([]string{uid})
	if err != nil || len(groups[uid]) == 0 {
		t.Fatalf("pod %s's cgroups: %v, %v", uid, groups, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, dir := range groups[uid] {
		if _, err := (fence.Killer{H: h, Proc: "/proc"}).Kill(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
}

// callsOf is the node plugin's call log, for a failure's message.
func callsOf(t *testing.T, path string) string {
	t.Helper()
	raw, _ := os.ReadFile(path)
	var lines []string
	for l := range strings.Lines(string(raw)) {
		var c csi.Call
		if json.Unmarshal([]byte(l), &c) == nil {
			lines = append(lines, c.String())
		}
	}
	return fmt.Sprintf("calls of the node plugin:\n%s", strings.Join(lines, "\n"))
}
