package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

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
	return createPods(ctx, c.conn.Runtime, c.Dir, n, perPod)
}

// createPods runs the pods of CreatePods on rt, their logs under dir.
func createPods(ctx context.Context, rt runtimeapi.RuntimeServiceClient, dir string, n, perPod int) ([]Pod, error) {
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
	_, err := Poll(ctx, 5*time.Minute, "container "+id+" to exit", func() bool {
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
