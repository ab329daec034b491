package observations

// PodStarts is the `podStarts` input: the pods bound to this node that
// wait for the runtime to start their sandbox, from the kubelet's Pods
// API, timed on hangwatch's clock.
type PodStarts struct {
	Waiting                    int     "cel:\"waiting\" doc:\"pods the kubelet has asked the runtime for a sandbox (it made their log directory) whose sandbox is not ready (`PodReadyToStartContainers` False), not terminal and not being deleted\""
	OldestWaitingSeconds       float64 "cel:\"oldestWaitingSeconds\" doc:\"how long the one that has waited longest has waited, from when hangwatch first saw it waiting; 0 when none waits\""
	OldestPod                  string  "cel:\"oldestPod\" doc:\"that pod, `namespace/name`\""
	OldestRuntimeClass         string  "cel:\"oldestRuntimeClass\" doc:\"its `runtimeClassName` (such as `nvidia`); empty for the runtime's default handler\""
	SinceSandboxStartedSeconds float64 "cel:\"sinceSandboxStartedSeconds\" doc:\"since a pod's sandbox last became ready on this node, or since hangwatch first listed the kubelet's pods\""
}
