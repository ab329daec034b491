package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/harness"
)

// CreatePods runs n host-network pod sandboxes, each with perPod running
// containers of the pause image, through CRI.
func (c *Containerd) CreatePods(ctx context.Context, n, perPod int) ([]harness.Pod, error) {
	return harness.CreatePodsOn(ctx, c.conn.Runtime, c.Dir, n, perPod)
}

// RunToExit runs one container of image with args (after its entrypoint)
// in a pod of its own, as a non-privileged container with a read-only root
// file system, waits until it exits and returns its exit code and output.
// The pod is removed before it returns.
func (c *Containerd) RunToExit(ctx context.Context, image string, args []string) (int32, string, error) {
	rt := c.conn.Runtime
	name := fmt.Sprintf("hw-run-%d", time.Now().UnixNano())
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: name, Namespace: "hangwatch-test"},
		LogDirectory: filepath.Join(c.Dir, "logs", name),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return 0, "", fmt.Errorf("RunPodSandbox: %w", err)
	}
	defer func() {
		_, _ = rt.StopPodSandbox(context.WithoutCancel(ctx), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId})
		_, _ = rt.RemovePodSandbox(context.WithoutCancel(ctx), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId})
	}()
	created, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId, SandboxConfig: cfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
			Image:    &runtimeapi.ImageSpec{Image: image},
			Args:     args,
			LogPath:  "main.log",
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				ReadonlyRootfs: true, NoNewPrivs: true,
			}},
		},
	})
	if err != nil {
		return 0, "", fmt.Errorf("CreateContainer: %w", err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.ContainerId}); err != nil {
		return 0, "", fmt.Errorf("StartContainer: %w", err)
	}
	code, err := c.waitExited(ctx, created.ContainerId)
	if err != nil {
		return 0, "", err
	}
	out, err := readCRILog(filepath.Join(cfg.LogDirectory, "main.log"))
	return code, out, err
}

// waitExited polls ContainerStatus until the container has exited.
func (c *Containerd) waitExited(ctx context.Context, id string) (int32, error) {
	var code int32
	var statusErr error
	_, err := harness.Poll(ctx, 5*time.Minute, "container "+id+" to exit", func() bool {
		st, err := c.conn.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			statusErr = fmt.Errorf("ContainerStatus: %w", err)
			return true
		}
		code = st.Status.ExitCode
		return st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	if statusErr != nil {
		return 0, statusErr
	}
	return code, err
}

// readCRILog returns the text of a CRI log file ("<time> <stream> <tag>
// <text>" per line).
func readCRILog(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if parts := strings.SplitN(line, " ", 4); len(parts) == 4 {
			b.WriteString(parts[3] + "\n")
		}
	}
	return b.String(), nil
}
