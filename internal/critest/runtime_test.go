package critest

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/internal/clocktest"
)

func TestAnswersAtOnceAndCounts(t *testing.T) {
	f := New(2, 3)
	pods, err := f.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(pods.Items) != 2 || pods.Items[1].Id != "b-pod" {
		t.Fatalf("ListPodSandbox = %v, %v; want a-pod, b-pod", pods, err)
	}
	one, _ := f.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: "a-pod"}})
	if len(one.Items) != 1 || one.Items[0].Id != "a-pod" {
		t.Fatalf("filtered by ID: %v", one.Items)
	}
	v, err := f.Version(context.Background(), &runtimeapi.VersionRequest{})
	if err != nil || v.RuntimeVersion != "1.0" {
		t.Fatalf("Version = %v, %v; want 1.0", v, err)
	}
	f.SetVersion("2.4.2")
	if v, _ := f.Version(context.Background(), &runtimeapi.VersionRequest{}); v.RuntimeVersion != "2.4.2" {
		t.Fatalf("Version after SetVersion = %s", v.RuntimeVersion)
	}
	if f.Count("ListPodSandbox") != 2 || f.Count("Version") != 2 || f.Count("ListContainers") != 0 {
		t.Fatalf("counts %d %d %d, want 2 2 0", f.Count("ListPodSandbox"), f.Count("Version"), f.Count("ListContainers"))
	}
}

func TestFailsChosenMethodsUntilCleared(t *testing.T) {
	f := New(1, 1)
	refused := status.Error(codes.Unavailable, "connection refused")
	f.Fail("Status", refused)
	if _, err := f.Status(context.Background(), &runtimeapi.StatusRequest{}); !errors.Is(err, refused) {
		t.Fatalf("Status err %v, want %v", err, refused)
	}
	f.Fail("Status", nil)
	if _, err := f.Status(context.Background(), &runtimeapi.StatusRequest{}); err != nil {
		t.Fatalf("Status after clearing: %v", err)
	}
}

func TestHangsUntilTheContextEndsOrARelease(t *testing.T) {
	f := New(1, 1)
	f.Hang("ContainerStatus")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "a-ctr"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("hung call on an ended context: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: "a-ctr"})
		done <- err
	}()
	clocktest.Await(t, "the call's hang", func() bool { return f.Blocked() == 1 })
	f.ReleaseHung()
	if err := <-done; err != nil {
		t.Fatalf("released call: %v", err)
	}
	if _, err := f.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "a-ctr"}); err != nil {
		t.Fatalf("after ReleaseHung the method still hangs: %v", err)
	}
	if f.Blocked() != 0 {
		t.Fatalf("%d calls still blocked", f.Blocked())
	}
}

func TestStreamsAreUnimplementedUnlessSet(t *testing.T) {
	f := New(2, 3)
	s, err := f.StreamContainers(context.Background(), &runtimeapi.StreamContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.Unimplemented {
		t.Fatalf("first Recv: %v, want Unimplemented", err)
	}
	f.SetStreams(true)
	ps, _ := f.StreamPodSandboxes(context.Background(), &runtimeapi.StreamPodSandboxesRequest{})
	n := 0
	for {
		m, err := ps.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || len(m.PodSandboxes) != 1 {
			t.Fatalf("Recv %d: %v, %v", n+1, m, err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d messages, want one per sandbox", n)
	}
}
