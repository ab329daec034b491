package harness

import (
	"context"
	"fmt"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pod is a running sandbox and its containers.
type Pod struct {
	SandboxID    string
	ContainerIDs []string
}

// CreatePods runs n host-network pod sandboxes, each with perPod running
// containers of the pause image, through CRI.
func (c *Containerd) CreatePods(ctx context.Context, n, perPod int) ([]Pod, error) {
	pods := make([]Pod, 0, n)
	for i := 0; i < n; i++ {
		p, err := c.createPod(ctx, fmt.Sprintf("hw-pod-%d", i), perPod)
		if err != nil {
			return pods, err
		}
		pods = append(pods, p)
	}
	return pods, nil
}

func (c *Containerd) createPod(ctx context.Context, name string, perPod int) (Pod, error) {
	rt := c.conn.Runtime
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: name + "-uid", Namespace: "hangwatch-test"},
		LogDirectory: filepath.Join(c.Dir, "logs", name),
		Labels:       map[string]string{"io.kubernetes.pod.uid": name + "-uid"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return Pod{}, fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	pod := Pod{SandboxID: sb.PodSandboxId}
	for j := 0; j < perPod; j++ {
		created, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId:  sb.PodSandboxId,
			SandboxConfig: cfg,
			Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprintf("c%d", j)},
				Image:    &runtimeapi.ImageSpec{Image: PauseImage},
				LogPath:  fmt.Sprintf("c%d.log", j),
				Linux:    &runtimeapi.LinuxContainerConfig{},
			},
		})
		if err != nil {
			return pod, fmt.Errorf("CreateContainer in %s: %w", name, err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.ContainerId}); err != nil {
			return pod, fmt.Errorf("StartContainer in %s: %w", name, err)
		}
		pod.ContainerIDs = append(pod.ContainerIDs, created.ContainerId)
	}
	return pod, nil
}

// RemoveAllPods stops and removes every sandbox (and so its containers).
func RemoveAllPods(ctx context.Context, rt runtimeapi.RuntimeServiceClient) error {
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("ListPodSandbox: %w", err)
	}
	var firstErr error
	for _, sb := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("StopPodSandbox %s: %w", sb.Id, err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("RemovePodSandbox %s: %w", sb.Id, err)
		}
	}
	return firstErr
}
