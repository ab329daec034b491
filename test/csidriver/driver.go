package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// driver is one instance of the driver: the controller, or one node's.
type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	name, nodeID string
	// volumes holds a folder per volume, its data; attachments a folder
	// per attached volume with a file per node it is attached to.
	volumes, attachments string
	mu                   sync.Mutex // the controller's attach and delete
}

func (d *driver) registerServices(srv *grpc.Server, mode string) {
	csi.RegisterIdentityServer(srv, d)
	if mode == "controller" {
		csi.RegisterControllerServer(srv, d)
	} else {
		csi.RegisterNodeServer(srv, d)
	}
}

// --- Identity

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: "v0.0.0-hangwatch"}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{Type: &csi.PluginCapability_Service_{
		Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}}}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// --- Controller

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// defaultCapacity is a volume's size when the claim asks for none.
const defaultCapacity = 1 << 30

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if err := checkID("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "volumes from a snapshot or a clone are not supported")
	}
	if err := os.MkdirAll(filepath.Join(d.volumes, req.GetName()), 0o777); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if size == 0 {
		size = defaultCapacity
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: req.GetName(), CapacityBytes: size}}, nil
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if err := checkID("volume ID", req.GetVolumeId()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if nodes := d.attachedTo(req.GetVolumeId()); len(nodes) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is attached to %s", req.GetVolumeId(), strings.Join(nodes, ", "))
	}
	if err := os.RemoveAll(filepath.Join(d.volumes, req.GetVolumeId())); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if err := d.checkVolume(req.GetVolumeId()); err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil //nolint:nilerr // the answer says why not
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

// ControllerPublishVolume attaches the volume to the node: refused while
// it is attached to another node, unless its access mode is a multi-node
// one, as a disk attaches to one machine.
func (d *driver) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	vol, node := req.GetVolumeId(), req.GetNodeId()
	if err := d.checkVolume(vol); err != nil {
		return nil, err
	}
	if err := checkID("node ID", node); err != nil {
		return nil, err
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, other := range d.attachedTo(vol) {
		if other != node && !multiNode(req.GetVolumeCapability().GetAccessMode().GetMode()) {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is attached to node %s", vol, other)
		}
	}
	dir := filepath.Join(d.attachments, vol)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.WriteFile(filepath.Join(dir, node), nil, 0o644); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.ControllerPublishVolumeResponse{}, nil
}

// ControllerUnpublishVolume detaches the volume from the node, or from
// every node when none is named.
func (d *driver) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	vol, node := req.GetVolumeId(), req.GetNodeId()
	if err := checkID("volume ID", vol); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	if node == "" {
		err = os.RemoveAll(filepath.Join(d.attachments, vol))
	} else if err = checkID("node ID", node); err == nil {
		if err = os.Remove(filepath.Join(d.attachments, vol, node)); errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		_ = os.Remove(filepath.Join(d.attachments, vol)) // once empty
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// attachedTo lists the nodes the volume is attached to.
func (d *driver) attachedTo(vol string) []string {
	entries, _ := os.ReadDir(filepath.Join(d.attachments, vol))
	var nodes []string
	for _, e := range entries {
		nodes = append(nodes, e.Name())
	}
	return nodes
}

func multiNode(m csi.VolumeCapability_AccessMode_Mode) bool {
	switch m {
	case csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:
		return true
	}
	return false
}

// --- Node

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.nodeID}, nil
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{Type: &csi.NodeServiceCapability_Rpc{
		Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}}}}, nil
}

// NodeStageVolume bind-mounts the volume's folder on the staging path,
// once the controller has attached the volume to this node.
func (d *driver) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	vol, staging := req.GetVolumeId(), req.GetStagingTargetPath()
	if err := d.checkVolume(vol); err != nil {
		return nil, err
	}
	if staging == "" {
		return nil, status.Error(codes.InvalidArgument, "no staging target path")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(d.attachments, vol, d.nodeID)); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not attached to node %s (attached to %v)", vol, d.nodeID, d.attachedTo(vol))
	}
	stage := func() error { return bindMount(filepath.Join(d.volumes, vol), staging, false) }
	if d.switchedOn(SwitchStageTmpfs) {
		stage = func() error { return mountTmpfs(staging) }
	}
	if err := stage(); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

func (d *driver) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if err := checkID("volume ID", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "no staging target path")
	}
	if err := unmount(req.GetStagingTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume bind-mounts the staging path on the pod's target path.
func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	staging, target := req.GetStagingTargetPath(), req.GetTargetPath()
	if err := checkID("volume ID", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if staging == "" || target == "" {
		return nil, status.Error(codes.InvalidArgument, "no staging target path or target path")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	if mounted, err := isMountPoint(staging); err != nil || !mounted {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s (%v)", req.GetVolumeId(), staging, err)
	}
	if err := bindMount(staging, target, req.GetReadonly()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if err := d.hangWhileSwitched(ctx, "NodeUnpublishVolume"); err != nil {
		return nil, err
	}
	if err := checkID("volume ID", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "no target path")
	}
	if err := unmount(req.GetTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(req.GetTargetPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// --- checks and mounts

// checkID refuses an empty ID or one that is not a single path element
// (IDs name folders).
func checkID(what, id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
		return status.Errorf(codes.InvalidArgument, "bad %s %q", what, id)
	}
	return nil
}

// checkVolume checks the ID and that the volume exists.
func (d *driver) checkVolume(vol string) error {
	if err := checkID("volume ID", vol); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(d.volumes, vol)); err != nil {
		return status.Errorf(codes.NotFound, "volume %s: %v", vol, err)
	}
	return nil
}

// checkCapabilities accepts file system volumes only (no raw block).
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	for _, c := range caps {
		if c == nil || c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "only file system (mount) volumes are supported")
		}
	}
	return nil
}

// bindMount bind-mounts src on target (made if missing), read-only when
// asked; nothing when target is a mount point already.
func bindMount(src, target string, readonly bool) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return err
	}
	if mounted, err := isMountPoint(target); err != nil || mounted {
		return err
	}
	if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount %s on %s: %w", src, target, err)
	}
	if readonly {
		if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			_ = syscall.Unmount(target, 0)
			return fmt.Errorf("remount %s read-only: %w", target, err)
		}
	}
	return nil
}

// unmount unmounts every mount stacked on path; nothing when there is
// none or path does not exist.
func unmount(path string) error {
	for {
		mounted, err := isMountPoint(path)
		if err != nil || !mounted {
			return err
		}
		if err := syscall.Unmount(path, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
}

// isMountPoint tells whether path is a mount point, from this process's
// mountinfo; false when it does not exist.
func isMountPoint(path string) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) > 4 && unescapeMountPath(f[4]) == real {
			return true, nil
		}
	}
	return false, nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
