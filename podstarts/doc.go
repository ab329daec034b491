// Package podstarts watches the write path from the kubelet's side: the
// pods bound to this node that the kubelet has asked the runtime to start,
// how long each has waited for its sandbox, or a container for its create
// or start, and when one last started. A runtime that answers every read
// but starts no pod (a CNI ADD that never returns, a runc init waiting on
// D-Bus, a snapshotter or an OCI hook that stalls) shows here while every
// CRI read the cri package times is fine.
//
// Its source is the kubelet's Pods API (KEP-4188; beta and on by default
// from Kubernetes 1.37): a gRPC stream on a unix socket under the
// kubelet's root directory, no request to the API server. How far a start
// has got comes from the directories the kubelet makes under its
// podLogsDir: the pod's just before RunPodSandbox, after its volumes are
// mounted; a container's after its image is on the node, just before
// CreateContainer. While some pod has such a directory and is not
// reported started, two lists of the runtime's (its ready sandboxes, its
// containers) say which call it waits on. A pod waiting for a volume, an
// image pulling or missing, an init container running, a restart or a
// back-off is not waiting on the runtime.
package podstarts
