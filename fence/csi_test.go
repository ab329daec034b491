package fence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// fakeNodePlugin is a CSI node plugin that records its calls.
type fakeNodePlugin struct {
	csi.UnimplementedNodeServer
	mu    sync.Mutex
	calls []string
}

func (p *fakeNodePlugin) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
}

func (p *fakeNodePlugin) NodeUnpublishVolume(_ context.Context, r *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	p.record("unpublish " + r.GetVolumeId() + " " + filepath.Base(filepath.Dir(r.GetTargetPath())))
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (p *fakeNodePlugin) NodeUnstageVolume(_ context.Context, r *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	p.record("unstage " + r.GetVolumeId() + " " + filepath.Base(r.GetStagingTargetPath()))
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (p *fakeNodePlugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{Type: &csi.NodeServiceCapability_Rpc{
		Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}}}}, nil
}

// csiNode is a kubelet root with the driver's socket served by a fake
// plugin, and pods' CSI volumes of handle vol-1 made with addPod.
type csiNode struct {
	m      Mounts
	plugin *fakeNodePlugin
}

func newCSINode(t *testing.T) *csiNode {
	t.Helper()
	root, err := os.MkdirTemp("", "csi") // a socket's path fits sun_path whatever the test's name
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	n := &csiNode{m: Mounts{Proc: t.TempDir(), KubeletRoot: root}, plugin: &fakeNodePlugin{}}
	writeTestFile(t, filepath.Join(n.m.Proc, "self", "mountinfo"), "")
	sock := filepath.Join(root, "plugins", "csi.example.com", "csi.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csi.RegisterNodeServer(srv, n.plugin)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	sum := sha256.Sum256([]byte("vol-1"))
	if err := os.MkdirAll(filepath.Join(root, "plugins", "kubernetes.io", "csi", "csi.example.com", hex.EncodeToString(sum[:]), "globalmount"), 0o755); err != nil {
		t.Fatal(err)
	}
	return n
}

// addPod records pod uid's CSI volume pv of vol-1; mounted: its target is
// a mount point in the mount table.
func (n *csiNode) addPod(t *testing.T, uid, pv string, mounted bool) {
	t.Helper()
	dir := filepath.Join(n.m.KubeletRoot, "pods", uid, "volumes", "kubernetes.io~csi", pv)
	writeTestFile(t, filepath.Join(dir, "vol_data.json"), `{"driverName":"csi.example.com","volumeHandle":"vol-1","specVolID":"`+pv+`"}`)
	if mounted {
		line := fmt.Sprintf("40 1 0:50 / %s rw - ext4 /dev/sdb rw\n", filepath.Join(dir, "mount"))
		f, err := os.OpenFile(filepath.Join(n.m.Proc, "self", "mountinfo"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReleaseCSIUnpublishesThenUnstagesTheLastUse: the node plugin is
// asked to unpublish the fenced pod's volume and, as no other pod of the
// node publishes it, to unstage it.
func TestReleaseCSIUnpublishesThenUnstagesTheLastUse(t *testing.T) {
	n := newCSINode(t)
	n.addPod(t, "aa-1", "pv-1", true)
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 1 || filepath.Base(unstaged[0]) != "globalmount" {
		t.Fatalf("ReleaseCSI = %v, %v", unstaged, err)
	}
	if got := strings.Join(n.plugin.calls, "; "); got != "unpublish vol-1 pv-1; unstage vol-1 globalmount" {
		t.Errorf("calls: %s", got)
	}
}

// TestReleaseCSIKeepsAVolumeAnotherPodPublishes: another pod of the node
// still has the volume published, so it stays staged.
func TestReleaseCSIKeepsAVolumeAnotherPodPublishes(t *testing.T) {
	n := newCSINode(t)
	n.addPod(t, "aa-1", "pv-1", true)
	n.addPod(t, "bb-2", "pv-1", true)
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 0 || strings.Join(n.plugin.calls, "; ") != "unpublish vol-1 pv-1" {
		t.Errorf("ReleaseCSI = %v, %v; calls %v", unstaged, err, n.plugin.calls)
	}
}

// TestReleaseCSIWithoutASocketLeavesItToTheUnmount: a driver that serves
// no socket here is not asked.
func TestReleaseCSIWithoutASocketLeavesItToTheUnmount(t *testing.T) {
	n := newCSINode(t)
	n.addPod(t, "aa-1", "pv-1", true)
	if err := os.Remove(filepath.Join(n.m.KubeletRoot, "plugins", "csi.example.com", "csi.sock")); err != nil {
		t.Fatal(err)
	}
	unstaged, err := n.m.ReleaseCSI(context.Background(), "aa-1")
	if err != nil || len(unstaged) != 0 || len(n.plugin.calls) != 0 {
		t.Errorf("ReleaseCSI = %v, %v; calls %v", unstaged, err, n.plugin.calls)
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
