package cri

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// MaxMessageSize is the kubelet's CRI receive limit (cri-client maxMsgSize).
// A list larger than this fails the kubelet's relist with ResourceExhausted;
// hangwatch uses the same limit so it fails the same way.
const MaxMessageSize = 16 << 20

// Conn is a gRPC connection to a runtime's CRI services.
type Conn struct {
	conn    *grpc.ClientConn
	Runtime runtimeapi.RuntimeServiceClient
	Image   runtimeapi.ImageServiceClient
	socket  *socketWatch // nil for tcp:// endpoints
}

// Dial prepares a connection to endpoint (unix:///path or a bare path). It
// does not wait for the runtime: connecting happens on the first call and
// is bounded by that call's deadline, so a frozen runtime cannot block here.
func Dial(endpoint string) (*Conn, error) {
	target, err := grpcTarget(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}))
	if err != nil {
		return nil, fmt.Errorf("runtime endpoint %q: %w", endpoint, err)
	}
	c := &Conn{conn: conn, Runtime: runtimeapi.NewRuntimeServiceClient(conn), Image: runtimeapi.NewImageServiceClient(conn)}
	if path, ok := strings.CutPrefix(target, "unix://"); ok {
		c.socket = newSocketWatch(path)
	}
	return c, nil
}

// RedialIfReplaced makes the next call dial at once when the runtime's
// socket was recreated (a runtime restart or upgrade unlinks it and binds a
// new one) since the last check, instead of waiting out the reconnect
// backoff. It reports whether the socket was replaced. Cheap: one stat.
func (c *Conn) RedialIfReplaced() bool {
	if c.socket == nil || !c.socket.replaced() {
		return false
	}
	c.conn.ResetConnectBackoff()
	return true
}

// Close closes the connection; calls still out end with Canceled.
func (c *Conn) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// NewConn wraps CRI clients that are not a gRPC connection of this
// package's (an in-process runtime in tests); Close and the redial do
// nothing.
func NewConn(rt runtimeapi.RuntimeServiceClient, img runtimeapi.ImageServiceClient) *Conn {
	return &Conn{Runtime: rt, Image: img}
}

// grpcTarget turns a CRI endpoint into a gRPC target.
func grpcTarget(endpoint string) (string, error) {
	switch {
	case endpoint == "":
		return "", fmt.Errorf("runtime endpoint is empty")
	case strings.HasPrefix(endpoint, "unix://"):
		path := strings.TrimPrefix(endpoint, "unix://")
		if path == "" || !strings.HasPrefix(path, "/") {
			return "", fmt.Errorf("runtime endpoint %q: want unix:///absolute/path", endpoint)
		}
		return "unix://" + path, nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix://" + endpoint, nil
	case strings.HasPrefix(endpoint, "tcp://"):
		return "dns:///" + strings.TrimPrefix(endpoint, "tcp://"), nil
	}
	return "", fmt.Errorf("runtime endpoint %q: unsupported scheme, want unix:// or tcp://", endpoint)
}
