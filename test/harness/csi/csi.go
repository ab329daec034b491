package csi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/internal/pins"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// The harness's CSI storage: a disk that attaches to one node at a time,
// for the tests of volumes that move between nodes. The driver is
// test/csidriver (its volumes are folders of one data directory of this
// machine, which every node instance shares, as a network disk is
// reachable from every node); the controller side runs it beside
// kubernetes-csi's external-attacher and external-provisioner, and each
// kubelet gets a node instance of its own and a registrar that registers
// it through the kubelet's plugins_registry. Every CSI call is recorded
// with its time (Calls).

const (
	// DriverName is the driver's name: its CSIDriver object's, and the
	// StorageClass's provisioner.
	DriverName = "csi.hangwatch.local"
	// StorageClass is the StorageClass Start makes: volumes of the
	// driver, provisioned as soon as a claim is made (Immediate), deleted
	// with their claim.
	StorageClass = "hangwatch-csi"
)

// CSIAttacherVersion and CSIProvisionerVersion are the sidecars' versions:
// internal/pins/pins.env names them and hack/csi/go.mod pins their
// modules.
var (
	CSIAttacherVersion    = pins.CSIAttacherVersion
	CSIProvisionerVersion = pins.CSIProvisionerVersion
)

// Driver is the driver's controller side, the sidecars and the node instances
// added to it.
type Driver struct {
	// Dir holds the driver's binary, its controller socket, the logs
	// (csi-*.log) and the call logs (calls-*.jsonl).
	Dir string
	// DataDir holds a folder per volume, the volume's data, and the
	// volumes' attachments (.attachments/<volume>/<node>).
	DataDir string
	cp      *harness.ControlPlane
	driver  string // the driver's binary, built from test/csidriver
	// controller, attacher and provisioner are the controller side's
	// processes.
	controller, attacher, provisioner *harness.Process
	mu                                sync.Mutex
	nodes                             map[string]*csiNode
}

// csiNode is one kubelet's node instance and registrar: processes of the
// harness's, or units of the node's systemd (AddNodeUnder).
type csiNode struct {
	plugin, registrar *harness.Process
	sd                *systemd.Systemd
	units, logs       []string
}

// Call is one CSI call the driver served, from its call log.
type Call struct {
	// Method is the CSI method: NodeStageVolume, NodeUnstageVolume,
	// NodePublishVolume, NodeUnpublishVolume, ControllerPublishVolume...
	Method string `json:"method"`
	// VolumeID is the call's volume (CreateVolume's: the name it was
	// given, which becomes the volume's ID); empty for a call of none.
	VolumeID string `json:"volume"`
	// Node is the node instance's ID (its Node's name), or on the
	// controller the node a (un)publish names.
	Node string `json:"node"`
	// Time is when the driver got the call, End when it answered.
	Time time.Time `json:"start"`
	End  time.Time `json:"end"`
	// Err is the gRPC status of a failed call; empty when it succeeded.
	Err string `json:"error"`
}

// String is the call as a line of a failure's message.
func (c Call) String() string {
	s := fmt.Sprintf("%s %s %s volume=%s node=%s", c.Time.Format("15:04:05.000"), c.End.Format("15:04:05.000"), c.Method, c.VolumeID, c.Node)
	if c.Err != "" {
		s += " error: " + c.Err
	}
	return s
}

// Sidecars finds the external-attacher and external-provisioner the
// setup command built (hack/lib.sh's ensure_csi): $HANGWATCH_CSI_BIN,
// else $HANGWATCH_CACHE or ~/.cache/hangwatch's
// csi-<attacher version>-<provisioner version>. It returns their folder.
func Sidecars() (string, error) {
	sub := "csi-" + CSIAttacherVersion + "-" + CSIProvisionerVersion
	var dirs []string
	if d := os.Getenv("HANGWATCH_CSI_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("HANGWATCH_CACHE"); d != "" {
		dirs = append(dirs, filepath.Join(d, sub))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "hangwatch", sub))
	}
	for _, d := range dirs {
		ok := true
		for _, b := range []string{"csi-attacher", "csi-provisioner"} {
			if st, err := os.Stat(filepath.Join(d, b)); err != nil || st.Mode()&0o111 == 0 {
				ok = false
			}
		}
		if ok {
			return d, nil
		}
	}
	return "", fmt.Errorf("the CSI sidecars (external-attacher %s, external-provisioner %s) are not built (hack/lib.sh's ensure_csi builds them); looked in %v",
		CSIAttacherVersion, CSIProvisionerVersion, dirs)
}

// BuildDriver builds test/csidriver (a module of its own) into
// dir/csidriver and returns its path.
func BuildDriver(dir string) (string, error) {
	bin := filepath.Join(dir, "csidriver")
	if err := harness.GoBuild(filepath.Join(harness.ModuleRoot(), "test", "csidriver"), bin, "."); err != nil {
		return "", fmt.Errorf("test/csidriver: %w", err)
	}
	return bin, nil
}

// StartT starts the CSI driver's controller side against cp (Start)
// and stops it when t ends.
func StartT(t testing.TB, cp *harness.ControlPlane) *Driver {
	t.Helper()
	harness.RequireRealParts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, cp)
	if err != nil {
		t.Fatalf("start the CSI driver: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// Start builds the driver, creates its CSIDriver object (attachRequired:
// a VolumeAttachment, which the attach-detach controller makes and the
// attacher carries out, must say the volume is attached to a node before
// its kubelet stages it there) and the StorageClass StorageClass, and
// starts the driver's controller instance, the external-attacher and the
// external-provisioner, as the admin. It returns once both sidecars have
// asked the driver its capabilities. Volumes need the controller-manager's
// persistentvolume-binder-controller and
// persistentvolume-attach-detach-controller, and a node instance on each
// kubelet (AddNode).
func Start(ctx context.Context, cp *harness.ControlPlane) (*Driver, error) {
	sidecars, err := Sidecars()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hwcsi-")
	if err != nil {
		return nil, err
	}
	c := &Driver{Dir: dir, DataDir: filepath.Join(dir, "data"), cp: cp, nodes: map[string]*csiNode{}}
	if err := c.start(ctx, sidecars); err != nil {
		err = fmt.Errorf("%w\n%s", err, c.logTails())
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Driver) start(ctx context.Context, sidecars string) error {
	var err error
	if c.driver, err = BuildDriver(c.Dir); err != nil {
		return err
	}
	if err := c.createObjects(ctx); err != nil {
		return err
	}
	socket := filepath.Join(c.Dir, "controller.sock")
	if c.controller, err = harness.StartProcess(c.Dir, "csi-controller", c.driver, "-mode=controller", "-endpoint="+socket,
		"-name="+DriverName, "-data-dir="+c.DataDir, "-calls="+c.callLog("controller")); err != nil {
		return err
	}
	// Failed attaches and provisions are retried from 1s, doubling up to
	// 10s (5 minutes by default), so that a test waits on Kubernetes and
	// not on a sidecar's back-off.
	common := []string{"--csi-address=" + socket, "--kubeconfig=" + c.cp.AdminKubeconfig, "--v=5", "--retry-interval-max=10s"}
	if c.attacher, err = harness.StartProcess(c.Dir, "csi-attacher", filepath.Join(sidecars, "csi-attacher"), common...); err != nil {
		return err
	}
	if c.provisioner, err = harness.StartProcess(c.Dir, "csi-provisioner", filepath.Join(sidecars, "csi-provisioner"), common...); err != nil {
		return err
	}
	_, err = harness.Poll(ctx, 2*time.Minute, "the external-attacher and external-provisioner to ask the driver its capabilities", func() bool {
		n := 0
		for _, call := range c.ControllerCalls() {
			if call.Method == "ControllerGetCapabilities" {
				n++
			}
		}
		return n >= 2
	}, harness.Every(100*time.Millisecond), harness.UnlessExited(c.controller, c.attacher, c.provisioner))
	return err
}

// createObjects creates the CSIDriver and the StorageClass.
func (c *Driver) createObjects(ctx context.Context) error {
	driver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: DriverName}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(false),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}}
	if _, err := c.cp.Admin.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CSIDriver %s: %w", DriverName, err)
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: StorageClass}, Provisioner: DriverName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	if _, err := c.cp.Admin.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageClass %s: %w", StorageClass, err)
	}
	return nil
}

// AddNodeT starts a node instance of the driver for k (AddNode) and stops
// it when t ends.
func (c *Driver) AddNodeT(t testing.TB, k *kubelet.Kubelet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { c.StopNode(k.Node) })
	if err := c.AddNode(ctx, k); err != nil {
		t.Fatalf("add the CSI driver to node %s: %v", k.Node, err)
	}
}

// AddNode starts a node instance of the driver for k, its node ID k's
// node name, serving <root>/plugins/<driver>/csi.sock under k's root
// dir, and a registrar that registers it through k's plugins_registry;
// it returns once the Node's CSINode lists the driver with that ID.
func (c *Driver) AddNode(ctx context.Context, k *kubelet.Kubelet) error {
	root := filepath.Join(k.Dir, "root")
	socket := filepath.Join(root, "plugins", DriverName, "csi.sock")
	n := &csiNode{}
	if err := c.claim(k.Node, n); err != nil {
		return err
	}
	var err error
	if n.plugin, err = harness.StartProcess(c.Dir, "csi-node-"+k.Node, c.driver, "-mode=node", "-endpoint="+socket,
		"-name="+DriverName, "-node-id="+k.Node, "-data-dir="+c.DataDir, "-calls="+c.callLog(k.Node)); err != nil {
		return err
	}
	if n.registrar, err = harness.StartProcess(c.Dir, "csi-registrar-"+k.Node, c.driver, "-mode=registrar", "-endpoint="+socket,
		"-registration-socket="+filepath.Join(root, "plugins_registry", DriverName+"-reg.sock")); err != nil {
		return err
	}
	return c.waitListed(ctx, k.Node, func() string { return n.plugin.LogTail(10) + "\n" + n.registrar.LogTail(10) },
		harness.UnlessExited(n.plugin, n.registrar))
}

// claim makes n node's instance of the driver, unless it has one.
func (c *Driver) claim(node string, n *csiNode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[node] != nil {
		return fmt.Errorf("node %s has the CSI driver already", node)
	}
	c.nodes[node] = n
	return nil
}

// waitListed waits until node's CSINode lists the driver with the node's
// ID; logs are the node instance's, for a timeout's message.
func (c *Driver) waitListed(ctx context.Context, node string, logs func() string, opts ...harness.WaitOption) error {
	last := ""
	_, err := harness.Poll(ctx, 90*time.Second, "node "+node+"'s CSINode to list "+DriverName, func() bool {
		cn, err := c.cp.Admin.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == DriverName && d.NodeID == node {
				return true
			}
		}
		last = fmt.Sprintf("drivers %v", cn.Spec.Drivers)
		return false
	}, append(opts, harness.Every(100*time.Millisecond), harness.Explaining(func() string { return last + "\n" + logs() }))...)
	return err
}

// StopNode stops node's instance of the driver and its registrar by PID
// (the kubelet then unregisters the driver); the volumes stay mounted.
func (c *Driver) StopNode(node string) {
	c.mu.Lock()
	n := c.nodes[node]
	delete(c.nodes, node)
	c.mu.Unlock()
	switch {
	case n != nil && n.sd != nil:
		n.stopUnits()
	case n != nil:
		n.registrar.Stop(5 * time.Second)
		n.plugin.Stop(5 * time.Second)
	}
}

// Calls are the CSI calls node's instance of the driver served, in the
// order they were answered.
func (c *Driver) Calls(node string) []Call { return readCSICalls(c.callLog(node)) }

// ControllerCalls are the CSI calls the controller instance served:
// CreateVolume, ControllerPublishVolume, ControllerUnpublishVolume...
func (c *Driver) ControllerCalls() []Call { return readCSICalls(c.callLog("controller")) }

// Processes are the controller side's processes and the node instances
// and registrars running, for a wait to watch (UnlessExited).
func (c *Driver) Processes() []harness.Watched {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []harness.Watched{c.controller, c.attacher, c.provisioner}
	for _, n := range c.nodes {
		if n.sd == nil {
			out = append(out, n.plugin, n.registrar)
		}
	}
	return out
}

// Stop stops every node instance and registrar left, the sidecars and the
// controller instance by PID, and removes Dir.
func (c *Driver) Stop() {
	c.mu.Lock()
	var nodes []string
	for node := range c.nodes {
		nodes = append(nodes, node)
	}
	c.mu.Unlock()
	for _, node := range nodes {
		c.StopNode(node)
	}
	for _, p := range []*harness.Process{c.provisioner, c.attacher, c.controller} {
		p.Stop(5 * time.Second)
	}
	_ = os.RemoveAll(c.Dir)
}

func (c *Driver) callLog(instance string) string {
	return filepath.Join(c.Dir, "calls-"+instance+".jsonl")
}

// LogTails are the ends of the logs of the controller side and of every
// node instance and registrar, for a failure's message.
func (c *Driver) LogTails() string { return c.logTails() }

func (c *Driver) logTails() string {
	c.mu.Lock()
	procs := []*harness.Process{c.controller, c.attacher, c.provisioner}
	var tails []string
	for _, n := range c.nodes {
		if n.sd != nil {
			tails = append(tails, n.logTails())
		}
		procs = append(procs, n.plugin, n.registrar)
	}
	c.mu.Unlock()
	for _, p := range procs {
		if p != nil {
			tails = append(tails, p.LogTail(15))
		}
	}
	return strings.Join(tails, "\n")
}

// readCSICalls reads a call log; a line that does not parse (one being
// written) ends it.
func readCSICalls(path string) []Call {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var calls []Call
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var call Call
		if err := json.Unmarshal(sc.Bytes(), &call); err != nil {
			break
		}
		calls = append(calls, call)
	}
	return calls
}
