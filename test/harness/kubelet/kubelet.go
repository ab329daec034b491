package kubelet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// Kubelet is a real kubelet started by the harness against a harness
// containerd and control plane, as its child or as a unit of the
// containerd's systemd (StartUnderSystemd). Give it a containerd of its own: the
// kubelet removes every pod it did not create.
type Kubelet struct {
	Dir  string
	Node string
	// Port is the authenticated HTTPS port (10250 on a node); ReadOnlyPort
	// serves /metrics without authentication, as where it is enabled.
	Port, ReadOnlyPort, HealthzPort int
	// ServingCert is the kubelet's self-signed serving certificate, which
	// is its own CA.
	ServingCert  string
	StaticPodDir string
	// Gates is the --feature-gates it runs with, such as
	// "EventedPLEG=true"; empty for the release's defaults.
	Gates string
	// CgroupRoot, when set, gives the kubelet pod cgroups (cgroupsPerQOS)
	// under this cgroup of its own, as on a real node: the fence finds
	// pods there. Empty: no pod cgroups (containerd's per-container ones).
	CgroupRoot string
	// CgroupDriver is the kubelet's cgroupDriver: "cgroupfs" when empty,
	// or "systemd" (StartUnderSystemdWith), whose runtime must use
	// the same driver.
	CgroupDriver string
	// systemdPodCgroups: pod cgroups with the systemd driver, under
	// kubepods.slice of the kubelet's systemd.
	systemdPodCgroups bool
	// nodeLayout: a node's ports and certificate dir (UnitOptions).
	nodeLayout bool
	proc       *harness.Process // the kubelet, when the harness runs it as its child
	sd         *systemd.Systemd // the systemd running it as KubeletUnit, when one does
	// unlockSysctls releases the kernel settings' shared lock a kubelet
	// under systemd holds for its life (kubeletsysctls.go); nil: none.
	unlockSysctls func()
	// unitPID is the unit's main PID (on the host) as started: while the
	// harness waits for the kubelet to be ready, another one (systemd
	// restarted it) or none means the kubelet exited.
	unitPID int
}

const kubeletConfigTemplate = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %[1]d
readOnlyPort: %[2]d
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[4]s}
authorization:
  mode: Webhook
cgroupDriver: %[10]s
cgroupsPerQOS: %[8]t
cgroupRoot: "%[9]s"
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: %[5]s
staticPodPath: %[6]s
fileCheckFrequency: 1s
podLogsDir: %[7]s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
localStorageCapacityIsolation: false
`

// Start starts a kubelet for node and waits until the Node is Ready.
func Start(ctx context.Context, cp *harness.ControlPlane, c NodeRuntime, node string) (*Kubelet, error) {
	return StartVia(ctx, cp, c, c.Where().Endpoint, node)
}

// StartVia starts a kubelet whose CRI endpoint is runtimeEndpoint
// (a fault proxy in front of c) and waits until the Node is Ready. Its
// feature gates are $HANGWATCH_KUBELET_FEATURE_GATES (hack/e2e.sh sets
// them for a row of its matrix), else the release's defaults.
func StartVia(ctx context.Context, cp *harness.ControlPlane, c NodeRuntime, runtimeEndpoint, node string) (*Kubelet, error) {
	return StartWithGates(ctx, cp, c, runtimeEndpoint, node, os.Getenv("HANGWATCH_KUBELET_FEATURE_GATES"))
}

// StartWithGates is StartVia with the kubelet's
// --feature-gates.
func StartWithGates(ctx context.Context, cp *harness.ControlPlane, c NodeRuntime, runtimeEndpoint, node, gates string) (*Kubelet, error) {
	k, bin, err := newKubelet(node, gates)
	if err != nil {
		return nil, err
	}
	if err := k.start(ctx, bin, cp, runtimeEndpoint); err != nil {
		err = fmt.Errorf("%w\n%s", err, k.logTail())
		k.Stop()
		return nil, err
	}
	return k, nil
}

// newKubelet finds the kubelet binary and makes the kubelet's temp dir.
func newKubelet(node, gates string) (*Kubelet, string, error) {
	bin, err := harness.KubeBinary("kubelet")
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "hwkl-")
	if err != nil {
		return nil, "", err
	}
	return &Kubelet{Dir: dir, Node: node, StaticPodDir: filepath.Join(dir, "manifests"), Gates: gates}, bin, nil
}

func (k *Kubelet) start(ctx context.Context, bin string, cp *harness.ControlPlane, runtimeEndpoint string) error {
	args, err := k.prepare(cp, runtimeEndpoint)
	if err != nil {
		return err
	}
	if k.proc, err = harness.StartProcess(k.Dir, "kubelet", bin, args...); err != nil {
		return err
	}
	return k.waitStarted(ctx, cp)
}

// prepare makes the kubelet's dirs, picks its free ports, writes its
// configuration and kubeconfig, and returns its command line after the
// binary: the same whether the harness or a systemd runs it.
func (k *Kubelet) prepare(cp *harness.ControlPlane, runtimeEndpoint string) ([]string, error) {
	for _, d := range []string{k.StaticPodDir, filepath.Join(k.Dir, "logs"), filepath.Join(k.Dir, "pki")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	ports, err := harness.FreePorts(3)
	if err != nil {
		return nil, err
	}
	k.Port, k.ReadOnlyPort, k.HealthzPort = ports[0], ports[1], ports[2]
	certDir := filepath.Join(k.Dir, "pki")
	if k.nodeLayout {
		k.Port, k.HealthzPort, certDir = 10250, 10248, filepath.Join(k.RootDir(), "pki")
	}
	k.ServingCert = filepath.Join(certDir, "kubelet.crt")
	config := filepath.Join(k.Dir, "config.yaml")
	body := fmt.Sprintf(kubeletConfigTemplate, k.Port, k.ReadOnlyPort, k.HealthzPort, cp.PKI.CAFile, runtimeEndpoint, k.StaticPodDir,
		filepath.Join(k.Dir, "logs"), k.CgroupRoot != "" || k.systemdPodCgroups, k.CgroupRoot, k.cgroupDriver())
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		return nil, err
	}
	kubeconfig, err := cp.NodeKubeconfig(k.Node)
	if err != nil {
		return nil, err
	}
	args := []string{"--config", config, "--kubeconfig", kubeconfig, "--root-dir", k.RootDir(),
		"--cert-dir", certDir, "--hostname-override", k.Node, "--node-ip", nodeIP(), "--v", "2"}
	if k.Gates != "" {
		args = append(args, "--feature-gates", k.Gates)
	}
	return args, nil
}

// cgroupDriver is CgroupDriver, "cgroupfs" when empty.
func (k *Kubelet) cgroupDriver() string {
	if k.CgroupDriver == "" {
		return "cgroupfs"
	}
	return k.CgroupDriver
}

// RootDir is the kubelet's --root-dir (/var/lib/kubelet on a node).
func (k *Kubelet) RootDir() string { return filepath.Join(k.Dir, "root") }

// waitStarted waits until the kubelet's /healthz answers and the Node is
// Ready.
func (k *Kubelet) waitStarted(ctx context.Context, cp *harness.ControlPlane) error {
	if err := harness.WaitHTTPUntil(ctx, "kubelet", k.alive, http.DefaultClient, k.HealthzURL()); err != nil {
		return err
	}
	return k.waitReady(ctx, cp)
}

// alive tells whether the kubelet started has not exited: the harness's
// child, or the unit's main process as started.
func (k *Kubelet) alive() bool {
	if k.sd == nil {
		return k.proc.Alive()
	}
	select {
	case <-k.sd.Exited():
		return false
	default:
	}
	return k.unitPID != 0 && k.PID() == k.unitPID
}

// waitReady waits until the Node reports Ready=True (at most two minutes).
func (k *Kubelet) waitReady(ctx context.Context, cp *harness.ControlPlane) error {
	last, gone := "not registered", false
	_, err := harness.Poll(ctx, 2*time.Minute, "node "+k.Node+" Ready", func() bool {
		ready, msg := k.Ready(ctx, cp)
		if msg != "" {
			last = msg
		}
		gone = !ready && !k.alive()
		return ready || gone
	}, harness.Every(200*time.Millisecond), harness.Explaining(func() string { return last }))
	if gone {
		return fmt.Errorf("kubelet exited before the node was Ready")
	}
	return err
}

// Ready reads the Node's Ready condition as the kubelet posted it.
func (k *Kubelet) Ready(ctx context.Context, cp *harness.ControlPlane) (bool, string) {
	n, err := cp.Admin.CoreV1().Nodes().Get(ctx, k.Node, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
		}
	}
	return false, "no Ready condition"
}

// MetricsURL is the authenticated metrics URL (HTTPS on Port).
func (k *Kubelet) MetricsURL() string { return fmt.Sprintf("https://127.0.0.1:%d/metrics", k.Port) }

// ReadOnlyMetricsURL is the unauthenticated read-only port's metrics URL.
func (k *Kubelet) ReadOnlyMetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", k.ReadOnlyPort)
}

// HealthzURL is the kubelet's local health check, on HealthzPort.
func (k *Kubelet) HealthzURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/healthz", k.HealthzPort)
}

// PID is the kubelet's process ID. Under systemd it is the unit's current
// main PID on the host, which changes when systemd restarts the kubelet,
// or 0 while it has none.
func (k *Kubelet) PID() int {
	if k.sd == nil {
		return k.proc.PID()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid, _ := k.sd.MainPID(ctx, KubeletUnit)
	return pid
}

// logTail is the end of the kubelet's log, Dir/kubelet.log either way,
// and under systemd the end of systemd's.
func (k *Kubelet) logTail() string {
	tail := harness.FileTail("kubelet", filepath.Join(k.Dir, "kubelet.log"), 25)
	if k.sd != nil {
		tail += "\n" + k.sd.LogTail(10)
	}
	return tail
}

// Stop stops the kubelet by PID, or under systemd stops its unit, and
// removes its dir (after unmounting what the kubelet mounted there). Pods
// it ran stay in containerd, whose own Stop removes them.
func (k *Kubelet) Stop() {
	if k.sd != nil {
		k.stopUnit()
	} else {
		k.proc.Stop(15 * time.Second)
	}
	if k.unlockSysctls != nil {
		k.unlockSysctls()
		k.unlockSysctls = nil
	}
	harness.UnmountUnder(k.Dir)
	_ = os.RemoveAll(k.Dir)
	if fs := k.cgroupFS(); fs != cgroupFS {
		removeCgroups(fs, k.CgroupRoot) // while systemd lives: its own hierarchies
	}
	removeCgroups(cgroupFS, k.CgroupRoot)
}

// nodeIP is a non-loopback IPv4 address of this machine, which the kubelet
// wants for the Node's addresses; loopback when there is none.
func nodeIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// StaticPod writes a host-network static pod of the pause image; the
// kubelet picks it up within its 1s file check.
func (k *Kubelet) StaticPod(name string) error {
	manifest := fmt.Sprintf(staticPodTemplate, name, harness.PauseImage)
	return os.WriteFile(filepath.Join(k.StaticPodDir, name+".yaml"), []byte(manifest), 0o644)
}

// RemoveStaticPod deletes the static pod's manifest; the kubelet stops it.
func (k *Kubelet) RemoveStaticPod(name string) error {
	return os.Remove(filepath.Join(k.StaticPodDir, name+".yaml"))
}

const staticPodTemplate = `apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: default
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: pause
    image: %[2]s
    imagePullPolicy: Never
`

// Freeze stops the kubelet with SIGSTOP: it renews no Lease and posts no
// status, while its pods run on. Under systemd it stops the unit's current
// main process.
func (k *Kubelet) Freeze() error { return k.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen kubelet.
func (k *Kubelet) Thaw() error { return k.signal(syscall.SIGCONT) }

func (k *Kubelet) signal(sig syscall.Signal) error { return harness.SignalPID("kubelet", k.PID(), sig) }
