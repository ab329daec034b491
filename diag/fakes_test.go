package diag

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime is a CRI runtime served over a unix socket in a temp dir:
// two pods with a container each, answered at once until frozen; then
// every call waits for its context to end. Only for the in-process tests;
// test/integration runs containerd and CRI-O.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer
	frozen atomic.Bool
}

// serveRuntime serves f and returns its unix:// endpoint.
func serveRuntime(t *testing.T, f *fakeRuntime) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return "unix://" + socket
}

func (f *fakeRuntime) wait(ctx context.Context) error {
	if f.frozen.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *fakeRuntime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "1.0", RuntimeApiVersion: "v1"}, f.wait(ctx)
}

func (f *fakeRuntime) Status(ctx context.Context, _ *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}}, f.wait(ctx)
}

var fakePods = []string{"pod-a", "pod-b"}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, r *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, id := range fakePods {
		if want := r.GetFilter().GetId(); want == "" || want == id {
			resp.Items = append(resp.Items, &runtimeapi.PodSandbox{Id: id, State: runtimeapi.PodSandboxState_SANDBOX_READY})
		}
	}
	return resp, f.wait(ctx)
}

func (f *fakeRuntime) ListContainers(ctx context.Context, r *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	resp := &runtimeapi.ListContainersResponse{}
	for _, id := range fakePods {
		if want := r.GetFilter().GetPodSandboxId(); want == "" || want == id {
			resp.Containers = append(resp.Containers, &runtimeapi.Container{Id: id + "-ctr", PodSandboxId: id,
				State: runtimeapi.ContainerState_CONTAINER_RUNNING})
		}
	}
	return resp, f.wait(ctx)
}

func (f *fakeRuntime) PodSandboxStatus(ctx context.Context, r *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: r.PodSandboxId}}, f.wait(ctx)
}

func (f *fakeRuntime) ContainerStatus(ctx context.Context, r *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: r.ContainerId}}, f.wait(ctx)
}

func (f *fakeRuntime) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, f.wait(ctx)
}

var lastSeenLine = regexp.MustCompile(`(?m)^kubelet_pleg_last_seen_seconds .*$`)

// serveKubelet serves the kubelet 1.34 capture's /metrics with the PLEG
// gauge at lastSeen.
func serveKubelet(t *testing.T, lastSeen time.Time) string {
	t.Helper()
	body, err := os.ReadFile("../kubeletmetrics/testdata/kubelet-1.34-healthy.prom")
	if err != nil {
		t.Fatal(err)
	}
	body = lastSeenLine.ReplaceAll(body, []byte(fmt.Sprintf("kubelet_pleg_last_seen_seconds %d", lastSeen.Unix())))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// serveAPIServer serves the node Lease of node-a, renewed at renewed, and
// returns a kubeconfig for it.
func serveAPIServer(t *testing.T, renewed time.Time) string {
	t.Helper()
	lease := fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"node-a","namespace":"kube-node-lease"},`+
		`"spec":{"holderIdentity":"node-a","leaseDurationSeconds":40,"renewTime":%q}}`, renewed.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(lease))
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n"+
		"current-context: c\nusers:\n- name: u\n  user: {}\n", srv.URL)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
