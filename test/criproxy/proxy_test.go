package criproxy_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
)

// TestProxyForwardsAndHangs runs the proxy in front of a real containerd:
// calls pass through, a held ListPodSandbox does not answer until it is
// released, and a ContainerStatus fault holds one container only.
func TestProxyForwardsAndHangs(t *testing.T) {
	c := containerd.StartT(t, 1, 2)
	p, err := criproxy.Start(filepath.Join(t.TempDir(), "proxy.sock"), c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	conn, err := cri.Dial(p.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rt := conn.Runtime
	call := func(timeout time.Duration, f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return f(ctx)
	}
	var list *runtimeapi.ListContainersResponse
	if err := call(5*time.Second, func(ctx context.Context) error {
		list, err = rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		return err
	}); err != nil || len(list.Containers) != 2 {
		t.Fatalf("ListContainers through the proxy: %v, %d containers", err, len(list.GetContainers()))
	}

	release := p.Inject(criproxy.Fault{Method: "ListPodSandbox"})
	err = call(time.Second, func(ctx context.Context) error {
		_, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		return err
	})
	if status.Code(err) != codes.DeadlineExceeded || p.Held("ListPodSandbox") != 1 {
		t.Fatalf("held ListPodSandbox: %v (held %d), want DeadlineExceeded", err, p.Held("ListPodSandbox"))
	}
	if err := call(5*time.Second, func(ctx context.Context) error {
		_, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	}); err != nil {
		t.Fatalf("Version while ListPodSandbox is held: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- call(10*time.Second, func(ctx context.Context) error {
			_, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
			return err
		})
	}()
	for p.Held("ListPodSandbox") < 2 {
		select {
		case err := <-done:
			t.Fatalf("ListPodSandbox answered while held: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("ListPodSandbox after release: %v", err)
	}

	one, other := list.Containers[0].Id, list.Containers[1].Id
	defer p.Inject(criproxy.Fault{Method: "ContainerStatus", ID: one})()
	if err := call(5*time.Second, func(ctx context.Context) error {
		_, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: other})
		return err
	}); err != nil {
		t.Fatalf("ContainerStatus of the other container: %v", err)
	}
	err = call(time.Second, func(ctx context.Context) error {
		_, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: one})
		return err
	})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("ContainerStatus of the held container: %v, want DeadlineExceeded", err)
	}
}
