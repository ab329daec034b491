package main

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"path"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// call is one CSI call as the call log records it, a JSON line;
// test/harness's CSICall reads the same fields.
type call struct {
	Method string    `json:"method"`           // NodeStageVolume, ControllerPublishVolume...
	Volume string    `json:"volume,omitempty"` // the volume ID, or the name CreateVolume was given
	Node   string    `json:"node,omitempty"`   // the node instance's ID, or the node a controller call names
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Error  string    `json:"error,omitempty"` // the gRPC status, empty when the call succeeded
}

// recorder appends every call to the call log.
type recorder struct {
	mu     sync.Mutex
	f      *os.File
	nodeID string
}

func openRecorder(file, nodeID string) (*recorder, error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &recorder{f: f, nodeID: nodeID}, nil
}

func (r *recorder) close() { _ = r.f.Close() }

// intercept runs a call and records it, in the call log and on stderr.
func (r *recorder) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c := call{Method: path.Base(info.FullMethod), Node: r.nodeID, Start: time.Now()}
	resp, err := handler(ctx, req)
	c.End = time.Now()
	switch q := req.(type) {
	case *csi.CreateVolumeRequest:
		c.Volume = q.GetName()
	case interface{ GetVolumeId() string }:
		c.Volume = q.GetVolumeId()
	}
	if q, ok := req.(interface{ GetNodeId() string }); ok && c.Node == "" {
		c.Node = q.GetNodeId()
	}
	if err != nil {
		c.Error = status.Convert(err).String()
	}
	line, _ := json.Marshal(c)
	r.mu.Lock()
	_, werr := r.f.Write(append(line, '\n'))
	r.mu.Unlock()
	if werr != nil {
		log.Printf("call log: %v", werr)
	}
	log.Printf("%s volume=%q node=%q took=%v error=%q", c.Method, c.Volume, c.Node, c.End.Sub(c.Start), c.Error)
	return resp, err
}
