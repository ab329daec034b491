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

// CreatePodsOn runs a runtime's CreatePods on rt, their logs under dir.
func CreatePodsOn(ctx context.Context, rt runtimeapi.RuntimeServiceClient, dir string, n, perPod int) ([]Pod, error) {
	pods := make([]Pod, 0, n)
	for i := 0; i < n; i++ {
		p, err := createPod(ctx, rt, dir, fmt.Sprintf("hw-pod-%d", i), perPod)
		if err != nil {
			return pods, err
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// createPod runs one sandbox sharing the host's network (so no CNI
// plugin is needed) and, as the kubelet asks for a pod that does not set
// shareProcessNamespace, a PID namespace per container (the zero value is
// POD): CRI-O then runs no pause process (drop_infra_ctr), whose
// oom_score_adj of -998 this machine's root may not set.
func createPod(ctx context.Context, rt runtimeapi.RuntimeServiceClient, dir, name string, perPod int) (Pod, error) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: name + "-uid", Namespace: "hangwatch-test"},
		LogDirectory: filepath.Join(dir, "logs", name),
		Labels:       map[string]string{"io.kubernetes.pod.uid": name + "-uid"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER},
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
				Image:    &runtimeapi.ImageSpec{Image: PauseImage, UserSpecifiedImage: PauseImage}, // CRI-O verifies the image by the name the user gave
				LogPath:  fmt.Sprintf("c%d.log", j),
				Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
					NamespaceOptions: cfg.Linux.SecurityContext.NamespaceOptions}},
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
