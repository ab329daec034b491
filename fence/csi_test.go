package fence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const testDriver = "csi.example.com"

// fakeNodePlugin is a CSI node plugin that records its calls and, like a
// real one, removes the mounts it unpublishes or unstages from the fake
// mount table. hang, when set, makes NodeUnpublishVolume wait for it (or
// for its caller to give up).
type fakeNodePlugin struct {
	csi.UnimplementedNodeServer
	mountinfo string
	hang      chan struct{}
	mu        sync.Mutex
	calls     []string
}

func (p *fakeNodePlugin) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
}

func (p *fakeNodePlugin) called() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.calls, "; ")
}

// unmount drops the fake mount table's last line mounted at target, as
// one umount2 unmounts the top of a stack.
func (p *fakeNodePlugin) unmount(target string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	raw, err := os.ReadFile(p.mountinfo)
	if err != nil {
		return err
	}
	lines := slices.Collect(strings.Lines(string(raw)))
	for i, line := range slices.Backward(lines) {
		if e, err := parseMountInfo(strings.TrimSuffix(line, "\n")); err == nil && e.MountPoint == target {
			lines = slices.Delete(lines, i, i+1)
			break
		}
	}
	return os.WriteFile(p.mountinfo, []byte(strings.Join(lines, "")), 0o644)
}

func (p *fakeNodePlugin) NodeUnpublishVolume(ctx context.Context, r *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	p.record("unpublish " + r.GetVolumeId() + " " + filepath.Base(filepath.Dir(r.GetTargetPath())))
	if p.hang != nil {
		select {
		case <-p.hang:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &csi.NodeUnpublishVolumeResponse{}, p.unmount(r.GetTargetPath())
}

func (p *fakeNodePlugin) NodeUnstageVolume(_ context.Context, r *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	rel := strings.TrimPrefix(r.GetStagingTargetPath(), filepath.Dir(filepath.Dir(filepath.Dir(r.GetStagingTargetPath())))+"/")
	p.record("unstage " + r.GetVolumeId() + " " + rel)
	return &csi.NodeUnstageVolumeResponse{}, p.unmount(r.GetStagingTargetPath())
}

func (p *fakeNodePlugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{Type: &csi.NodeServiceCapability_Rpc{
		Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}}}}, nil
}

// fakeRegistrar answers the kubelet's plugin registration GetInfo.
type fakeRegistrar struct {
	registerapi.UnimplementedRegistrationServer
	info *registerapi.PluginInfo
	hang bool
}

func (r *fakeRegistrar) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	if r.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return r.info, nil
}

// csiNode is a kubelet root with a fake node plugin serving the driver,
// and pods' CSI volumes of handle vol-1 made with addPod.
type csiNode struct {
	m      Mounts
	plugin *fakeNodePlugin
	// sock is where the plugin serves.
	sock string
}

// newCSINode serves the plugin at sock, relative to the kubelet root
// (plugins/<driver>/csi.sock is where the conventional path looks).
func newCSINode(t *testing.T, sock string) *csiNode {
	t.Helper()
	root, err := os.MkdirTemp("", "csi") // a socket's path fits sun_path whatever the test's name
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	n := &csiNode{m: Mounts{Proc: t.TempDir(), KubeletRoot: root}, sock: filepath.Join(root, sock)}
	n.plugin = &fakeNodePlugin{mountinfo: filepath.Join(n.m.Proc, "self", "mountinfo")}
	writeTestFile(t, n.plugin.mountinfo, "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n")
	srv := grpc.NewServer()
	csi.RegisterNodeServer(srv, n.plugin)
	serveTest(t, srv, n.sock)
	return n
}

// serveTest serves srv on a Unix socket at path until the test ends.
func serveTest(t *testing.T, srv *grpc.Server, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
}

// register serves a registration socket named name under plugins_registry
// that answers info (or hangs).
func (n *csiNode) register(t *testing.T, name string, r *fakeRegistrar) {
	t.Helper()
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, r)
	serveTest(t, srv, filepath.Join(n.m.KubeletRoot, "plugins_registry", name))
}

// stage records vol-1 as staged by the kubelet in the given layout
// (relative to plugins/kubernetes.io/csi/), mounted there from /dev/sdb.
func (n *csiNode) stage(t *testing.T, layout string) string {
	t.Helper()
	dir := filepath.Join(n.m.KubeletRoot, csiPluginDir, layout)
	writeTestFile(t, filepath.Join(dir, "vol_data.json"), `{"driverName":"`+testDriver+`","volumeHandle":"vol-1"}`)
	if err := os.MkdirAll(filepath.Join(dir, "globalmount"), 0o755); err != nil {
		t.Fatal(err)
	}
	n.mount(t, filepath.Join(dir, "globalmount"), "8:16 / ", "ext4 /dev/sdb")
	return filepath.Join(dir, "globalmount")
}

// hashLayout is the kubelet's <driver>/<sha256(handle)> staging layout.
func hashLayout(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return filepath.Join(testDriver, hex.EncodeToString(sum[:]))
}

// mount appends a line to the fake mount table.
func (n *csiNode) mount(t *testing.T, point, devRoot, fsSource string) {
	t.Helper()
	f, err := os.OpenFile(n.plugin.mountinfo, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "40 1 %s%s rw - %s rw\n", devRoot, point, fsSource); err != nil {
		t.Fatal(err)
	}
}

// addPod records pod uid's CSI volume pv of vol-1; mounted: its target is
// a mount point in the mount table.
func (n *csiNode) addPod(t *testing.T, uid, pv string, mounted bool) string {
	t.Helper()
	dir := filepath.Join(n.m.KubeletRoot, "pods", uid, "volumes", "kubernetes.io~csi", pv)
	writeTestFile(t, filepath.Join(dir, "vol_data.json"), `{"driverName":"`+testDriver+`","volumeHandle":"vol-1","specVolID":"`+pv+`"}`)
	if mounted {
		n.mount(t, filepath.Join(dir, "mount"), "8:16 / ", "ext4 /dev/sdb")
	}
	return filepath.Join(dir, "mount")
}

// TestReleaseCSIUnpublishesThenUnstagesTheLastUse: the node plugin is
// asked to unpublish the fenced pod's volume and, as no other pod of the
// node publishes it, to unstage it.
func TestReleaseCSIUnpublishesThenUnstagesTheLastUse(t *testing.T) {
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	n.stage(t, hashLayout("vol-1"))
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 1 || filepath.Base(unstaged[0]) != "globalmount" {
		t.Fatalf("ReleaseCSI = %v, %v", unstaged, err)
	}
	if got, want := n.plugin.called(), "unpublish vol-1 pv-1; unstage vol-1 "+hashLayout("vol-1")+"/globalmount"; got != want {
		t.Errorf("calls: %s, want %s", got, want)
	}
}

// TestReleaseCSIKeepsAVolumeAnotherPodPublishes: another pod of the node
// still has the volume published, so it stays staged.
func TestReleaseCSIKeepsAVolumeAnotherPodPublishes(t *testing.T) {
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	n.addPod(t, "bb-2", "pv-1", true)
	n.stage(t, hashLayout("vol-1"))
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 0 || n.plugin.called() != "unpublish vol-1 pv-1" {
		t.Errorf("ReleaseCSI = %v, %v; calls %v", unstaged, err, n.plugin.called())
	}
}

// TestReleaseCSIThroughTheRegisteredSocket: the driver serves its node
// socket where its registration says, not at plugins/<driver>/csi.sock;
// the fence asks it there, as the kubelet does (today's code left the
// staging mount and reported nothing to do).
func TestReleaseCSIThroughTheRegisteredSocket(t *testing.T) {
	n := newCSINode(t, "elsewhere/node.sock")
	n.register(t, "other-reg.sock", &fakeRegistrar{info: &registerapi.PluginInfo{Type: registerapi.DevicePlugin, Name: "gpu", Endpoint: "/nonexistent"}})
	n.register(t, "sub/"+testDriver+"-reg.sock", &fakeRegistrar{info: &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: testDriver, Endpoint: n.sock}})
	n.register(t, ".hidden-reg.sock", &fakeRegistrar{hang: true}) // the kubelet ignores it, and so must the fence
	n.addPod(t, "aa-1", "pv-1", true)
	n.stage(t, hashLayout("vol-1"))
	start := time.Now()
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 1 {
		t.Fatalf("ReleaseCSI = %v, %v; calls %s", unstaged, err, n.plugin.called())
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("ReleaseCSI took %v: it asked the hidden socket", time.Since(start))
	}
}

// TestReleaseCSIWithoutASocketIsImpossibleWhenStaged: no registration and
// no conventional socket, and the kubelet staged the volume: the fence
// cannot unstage it, so it is impossible (today's code skipped it).
func TestReleaseCSIWithoutASocketIsImpossibleWhenStaged(t *testing.T) {
	n := newCSINode(t, "elsewhere/node.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	staging := n.stage(t, hashLayout("vol-1"))
	_, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if !errors.Is(err, ErrImpossible) || !strings.Contains(err.Error(), staging) {
		t.Fatalf("ReleaseCSI error = %v; want ErrImpossible naming %s", err, staging)
	}
}

// TestReleaseCSIWithoutASocketLeavesAnUnstagedVolumeToTheUnmount: a
// driver that serves no socket here and never staged is not asked.
func TestReleaseCSIWithoutASocketLeavesAnUnstagedVolumeToTheUnmount(t *testing.T) {
	n := newCSINode(t, "elsewhere/node.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 0 || n.plugin.called() != "" {
		t.Errorf("ReleaseCSI = %v, %v; calls %v", unstaged, err, n.plugin.called())
	}
}

// TestReleaseCSIOldStagingLayout: the volume was staged at
// plugins/kubernetes.io/csi/pv/<pv>/globalmount, where older kubelets
// staged; the fence unstages it there (today's code looked only at the
// hash layout and left it mounted).
func TestReleaseCSIOldStagingLayout(t *testing.T) {
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	n.stage(t, "pv/pv-1")
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 1 || !strings.HasSuffix(unstaged[0], "/pv/pv-1/globalmount") {
		t.Fatalf("ReleaseCSI = %v, %v; calls %s", unstaged, err, n.plugin.called())
	}
	if got := n.plugin.called(); got != "unpublish vol-1 pv-1; unstage vol-1 pv/pv-1/globalmount" {
		t.Errorf("calls: %s", got)
	}
}

// TestReleaseCSIHangingUnpublishIsImpossibleWithinTheDeadline: a node
// plugin that never answers NodeUnpublishVolume makes the release
// impossible within the call's deadline, not never.
func TestReleaseCSIHangingUnpublishIsImpossibleWithinTheDeadline(t *testing.T) {
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.plugin.hang = make(chan struct{})
	defer close(n.plugin.hang)
	n.m.CallTimeout = 300 * time.Millisecond
	n.addPod(t, "aa-1", "pv-1", true)
	n.stage(t, hashLayout("vol-1"))
	start := time.Now()
	_, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("ReleaseCSI took %v; want about its 300ms call deadline", took)
	}
	if !errors.Is(err, ErrImpossible) || !strings.Contains(err.Error(), "NodeUnpublishVolume") {
		t.Fatalf("ReleaseCSI error = %v; want ErrImpossible naming NodeUnpublishVolume", err)
	}
}

// TestReleaseCSIHangingRegistrationDoesNotHideTheDriver: a registration
// socket that never answers costs one call deadline, and the driver
// registered beside it is still found.
func TestReleaseCSIHangingRegistrationDoesNotHideTheDriver(t *testing.T) {
	n := newCSINode(t, "elsewhere/node.sock")
	n.m.CallTimeout = 300 * time.Millisecond
	n.register(t, "stuck-reg.sock", &fakeRegistrar{hang: true})
	n.register(t, testDriver+"-reg.sock", &fakeRegistrar{info: &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: testDriver, Endpoint: n.sock}})
	n.addPod(t, "aa-1", "pv-1", true)
	n.stage(t, hashLayout("vol-1"))
	start := time.Now()
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 1 || time.Since(start) > 3*time.Second {
		t.Fatalf("ReleaseCSI = %v, %v after %v", unstaged, err, time.Since(start))
	}
}

// TestReleaseCSIDriverThatLeavesTheStagingMount: the driver says it
// unstaged, but the staging directory is still a mount point: not
// released.
func TestReleaseCSIDriverThatLeavesTheStagingMount(t *testing.T) {
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	staging := n.stage(t, hashLayout("vol-1"))
	n.mount(t, staging, "8:16 / ", "ext4 /dev/sdb") // stacked twice: the driver unmounts one
	_, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if !errors.Is(err, ErrImpossible) || !strings.Contains(err.Error(), "still mounted") {
		t.Fatalf("ReleaseCSI error = %v; want ErrImpossible, still mounted", err)
	}
}

func FuzzParseVolData(f *testing.F) {
	f.Add([]byte(`{"driverName":"csi.example.com","volumeHandle":"vol-1"}`))
	f.Add([]byte(`{"driverName":"../x","volumeHandle":""}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := parseVolData("vol_data.json", raw)
		if err == nil && (v.Driver == "" || v.Handle == "" || strings.Contains(v.Driver, "/")) {
			t.Fatalf("accepted %+v", v)
		}
	})
}

// TestReleaseCSIRegisteredEndpointNotHere: the registration names an
// endpoint that is no socket here; the conventional path serves.
func TestReleaseCSIRegisteredEndpointNotHere(t *testing.T) {
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.register(t, testDriver+"-reg.sock", &fakeRegistrar{info: &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: testDriver, Endpoint: "/nonexistent/csi.sock"}})
	n.addPod(t, "aa-1", "pv-1", true)
	n.stage(t, hashLayout("vol-1"))
	if unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1"); err != nil || len(unstaged) != 1 {
		t.Fatalf("ReleaseCSI = %v, %v; calls %s", unstaged, err, n.plugin.called())
	}
}
