// Command csidriver is the harness's CSI driver: a disk that attaches to
// one node at a time, made of folders of a data directory that every
// instance on the machine shares (as a network disk is reachable from
// every node). test/harness/csi's StartT runs it beside the
// external-attacher and external-provisioner sidecars, and AddNodeT one
// node instance and one registrar per kubelet.
//
// It runs in one of three modes:
//
//	-mode controller  the Identity and Controller services: CreateVolume makes
//	                  a folder, ControllerPublishVolume attaches it to a node
//	                  (refused while it is attached to another, as for a
//	                  single-node disk), ControllerUnpublishVolume detaches it.
//	-mode node        the Identity and Node services of one node: stage
//	                  bind-mounts the volume's folder on the staging path
//	                  (refused unless the volume is attached to this node),
//	                  publish bind-mounts the staging path on the pod's.
//	-mode registrar   node-driver-registrar's part: registers the node
//	                  instance's socket with the kubelet through its
//	                  plugins_registry (the kubelet's plugin watcher).
//
// Every CSI call is appended as a JSON line to -calls (method, volume,
// node, start and end time, error), the record the tests read.
//
// It is a module of its own, so that hangwatch's module does not depend
// on the CSI spec; the harness builds it with go build.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"google.golang.org/grpc"
)

func main() {
	mode := flag.String("mode", "", "controller, node or registrar")
	endpoint := flag.String("endpoint", "", "the CSI socket to serve (controller, node) or to register (registrar)")
	name := flag.String("name", "csi.hangwatch.local", "the driver's name")
	nodeID := flag.String("node-id", "", "the node's ID, its Node's name (node)")
	dataDir := flag.String("data-dir", "", "the shared folder holding the volumes and their attachments (controller, node)")
	calls := flag.String("calls", "", "the file each CSI call is appended to as a JSON line (controller, node)")
	regSocket := flag.String("registration-socket", "", "the registration socket to serve in the kubelet's plugins_registry (registrar)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	switch *mode {
	case "controller", "node":
		err = serveCSI(ctx, *mode, *endpoint, *name, *nodeID, *dataDir, *calls)
	case "registrar":
		err = register(ctx, *endpoint, *regSocket)
	default:
		err = fmt.Errorf("-mode %q: want controller, node or registrar", *mode)
	}
	if err != nil {
		log.Fatal(err) //nolint:forbidigo // main exits
	}
}

// serveCSI serves the CSI services of mode on endpoint until ctx ends.
func serveCSI(ctx context.Context, mode, endpoint, name, nodeID, dataDir, calls string) error {
	if endpoint == "" || dataDir == "" || calls == "" || (mode == "node" && nodeID == "") {
		return fmt.Errorf("-mode %s needs -endpoint, -data-dir, -calls and, for a node, -node-id", mode)
	}
	rec, err := openRecorder(calls, nodeID)
	if err != nil {
		return err
	}
	defer rec.close()
	d := &driver{name: name, nodeID: nodeID, volumes: dataDir, attachments: filepath.Join(dataDir, ".attachments")}
	if err := os.MkdirAll(d.attachments, 0o755); err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(rec.intercept))
	d.registerServices(srv, mode)
	return serve(ctx, srv, endpoint)
}

// serve serves srv on the unix socket path until ctx ends, then removes it.
func serve(ctx context.Context, srv *grpc.Server, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	log.Printf("serving on %s", path)
	err = srv.Serve(ln)
	_ = os.Remove(path)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
