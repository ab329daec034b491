package fakecri

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pods is how many pods Objects spreads the containers over: the
// kubelet's default maxPods. An answer of many MiB on such a node is
// mostly exited containers (a crash loop, a garbage collection that does
// not keep up), as the reports of oversized lists are.
const Pods = 110

// Objects returns Pods sandboxes (fewer for a small target) and
// containers as the kubelet's carry them (its labels and annotations,
// 64-hex ids, image references by digest): two running in each pod, the
// rest exited, enough that the ListContainers answer encodes to at most
// target bytes, within one container's size of it.
func Objects(target int) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) {
	var ctrs []*runtimeapi.Container
	size := 0
	for i := 0; ; i++ {
		c := container(i)
		n := proto.Size(c) // a repeated field costs its tag, its length and the message
		n += 1 + varintLen(n)
		if size+n > target {
			break
		}
		size += n
		ctrs = append(ctrs, c)
	}
	pods := make([]*runtimeapi.PodSandbox, 0, Pods)
	for p := 0; p < Pods && p < len(ctrs); p++ {
		pods = append(pods, sandbox(p))
	}
	return pods, ctrs
}

func varintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

func hexID(kind string, i int) string {
	return fmt.Sprintf("%064x", fmt.Sprintf("%s-%d", kind, i))[:64]
}

func sandbox(pod int) *runtimeapi.PodSandbox {
	name, ns, uid := fmt.Sprintf("app-%d-7d9f8b6c5d-x%04d", pod, pod%10000), fmt.Sprintf("team-%d", pod%50), fmt.Sprintf("6f1c2a4e-%04x-4b7d-9e3a-%012x", pod%0x10000, pod)
	return &runtimeapi.PodSandbox{Id: hexID("pod", pod), State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: 1764000000000000000 + int64(pod),
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: ns, Uid: uid},
		Labels: map[string]string{"app": fmt.Sprintf("app-%d", pod), "io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": ns,
			"io.kubernetes.pod.uid": uid, "pod-template-hash": "7d9f8b6c5d"},
		Annotations: map[string]string{"kubernetes.io/config.seen": "2026-11-25T12:00:00.000000000Z", "kubernetes.io/config.source": "api"}}
}

func container(i int) *runtimeapi.Container {
	pod := i % Pods
	s := sandbox(pod)
	name := []string{"main", "sidecar"}[i/Pods%2]
	state, attempt := runtimeapi.ContainerState_CONTAINER_RUNNING, uint32(i/(2*Pods))
	if i >= 2*Pods {
		state = runtimeapi.ContainerState_CONTAINER_EXITED
	}
	image := fmt.Sprintf("registry.example.com/team-%d/app-%d@sha256:%064x", pod%50, pod, pod)
	return &runtimeapi.Container{Id: hexID("ctr", i), PodSandboxId: s.Id, State: state,
		CreatedAt: 1764000000000000000 + int64(i), Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: fmt.Sprintf("sha256:%064x", pod), UserSpecifiedImage: image},
		ImageRef: image, ImageId: fmt.Sprintf("sha256:%064x", pod),
		Labels: map[string]string{"io.kubernetes.container.name": name, "io.kubernetes.pod.name": s.Metadata.Name,
			"io.kubernetes.pod.namespace": s.Metadata.Namespace, "io.kubernetes.pod.uid": s.Metadata.Uid},
		Annotations: map[string]string{"io.kubernetes.container.hash": fmt.Sprintf("%08x", pod), "io.kubernetes.container.restartCount": fmt.Sprint(attempt),
			"io.kubernetes.container.terminationMessagePath": "/dev/termination-log", "io.kubernetes.container.terminationMessagePolicy": "File",
			"io.kubernetes.pod.terminationGracePeriod": "30",
			"io.kubernetes.container.ports":            `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`}}
}
