package fence

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeProbeTimeout bounds the repair process's own look at the runtime
// before and after a fence's kill: a runtime that answers Status or a
// list within it is not stuck, whatever the agent said.
const runtimeProbeTimeout = 3 * time.Second

// probeNoSandbox is the probe's list filter: an ID no runtime gives, so
// the list goes through the runtime's list path for an empty answer.
const probeNoSandbox = "hangwatch-fence-probe-matches-nothing"

// RuntimeProbe asks the runtime itself, on its CRI socket, whether it
// answers the calls the kubelet's pod lifecycle needs: "" when neither
// Status nor ListPodSandbox answered within runtimeProbeTimeout (or ctx)
// (a socket nothing listens on answers nothing: gRPC's Unavailable), else
// the call that answered and in how long. It is the fence's
// corroboration that the agent does not write.
type RuntimeProbe func(ctx context.Context) string

// ProbeRuntime is the RuntimeProbe of the runtime at socket
// ("unix:///run/containerd/containerd.sock" or a path).
func ProbeRuntime(socket string) RuntimeProbe {
	return func(ctx context.Context) string {
		return probeRuntime(ctx, socket)
	}
}

func probeRuntime(ctx context.Context, socket string) string {
	ctx, cancel := context.WithTimeout(ctx, runtimeProbeTimeout)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+strings.TrimPrefix(socket, "unix://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "" // no client: nothing answered
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	calls := map[string]func() error{
		"Status": func() error { _, err := rt.Status(ctx, &runtimeapi.StatusRequest{}); return err },
		"ListPodSandbox": func() error {
			_, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: probeNoSandbox}})
			return err
		},
	}
	var mu sync.Mutex
	answered := ""
	var wg sync.WaitGroup
	start := time.Now()
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(); err != nil && (ctx.Err() != nil || status.Code(err) == codes.Unavailable) {
				return // no answer within the deadline, or nothing listens on the socket
			}
			mu.Lock()
			defer mu.Unlock()
			if answered == "" {
				answered = fmt.Sprintf("%s answered in %v", name, time.Since(start).Round(time.Millisecond))
			}
			cancel() // one answer is enough
		}()
	}
	wg.Wait()
	return answered
}
