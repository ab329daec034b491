package observations

// PodStarts is the `podStarts` input: the pods bound to this node that
// wait for the runtime to start their sandbox, and the containers that
// wait for it to create or start them, from the kubelet's Pods API and
// the runtime's lists, timed on hangwatch's clock.
type PodStarts struct {
	Waiting                       int     "cel:\"waiting\" doc:\"pods the kubelet has asked the runtime for a sandbox (it made their log directory) that the runtime has no ready sandbox for (or, when the runtime's lists do not answer, that the kubelet reports `PodReadyToStartContainers` False), not terminal and not being deleted\""
	OldestWaitingSeconds          float64 "cel:\"oldestWaitingSeconds\" doc:\"how long the one that has waited longest has waited, from when hangwatch first saw it waiting; 0 when none waits\""
	OldestPod                     string  "cel:\"oldestPod\" doc:\"that pod, `namespace/name`\""
	OldestRuntimeClass            string  "cel:\"oldestRuntimeClass\" doc:\"its `runtimeClassName` (such as `nvidia`); empty for the runtime's default handler\""
	OldestSandboxStep             string  "cel:\"oldestSandboxStep\" doc:\"the part of `RunPodSandbox` it waits on: `network` when the runtime is containerd, the pod has a network of its own (not the host's, not in a user namespace) and containerd has made no sandbox container it does not list yet: it sets the pod network up (the CNI plugin's ADD) before it creates one, and that has not returned; `sandbox` otherwise, and always on CRI-O (it starts the sandbox container before the network); empty when none waits\""
	SinceSandboxStartedSeconds    float64 "cel:\"sinceSandboxStartedSeconds\" doc:\"since a pod's sandbox last became ready on this node, or since hangwatch first listed the kubelet's pods\""
	ContainersWaiting             int     "cel:\"containersWaiting\" doc:\"containers on their first start that the kubelet has asked the runtime to create (it made their log directory, after their image was on the node) and that the runtime has not started, in a ready sandbox; a restart, a back-off or a create that answered with an error is not counted\""
	OldestContainerWaitingSeconds float64 "cel:\"oldestContainerWaitingSeconds\" doc:\"how long the container that has waited longest has waited, from when hangwatch first saw it waiting; 0 when none waits\""
	OldestContainer               string  "cel:\"oldestContainer\" doc:\"that container, `namespace/pod/container`\""
	OldestContainerStep           string  "cel:\"oldestContainerStep\" doc:\"the call it waits on: `create` (the runtime has no such container: `CreateContainer` has not answered) or `start` (created, `StartContainer` has not answered)\""
	OldestContainerRuntimeClass   string  "cel:\"oldestContainerRuntimeClass\" doc:\"its pod's `runtimeClassName`; empty for the runtime's default handler\""
	SinceContainerStartedSeconds  float64 "cel:\"sinceContainerStartedSeconds\" doc:\"since a container last started on this node, or since hangwatch first listed the kubelet's pods\""
	ProbeInFlightSeconds          float64 "cel:\"probeInFlightSeconds\" doc:\"how long the write path probe's `RunPodSandbox` (opt-in: `podStarts.probe`) has waited; 0 when none is out\""
}
