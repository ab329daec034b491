package containerd

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerdRunsPods(t *testing.T) {
	c := StartT(t, 2, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctrs, err := c.Runtime().ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, ctr := range ctrs.Containers {
		if ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	if running != 4 {
		t.Fatalf("running containers = %d, want 4 (of %d)", running, len(ctrs.Containers))
	}
}
