// Package podstarts watches the write path from the kubelet's side: the
// pods bound to this node that the kubelet has asked the runtime to start
// a sandbox for, how long each has waited, and when a sandbox last
// started. A runtime that answers every read but starts no pod (a CNI ADD
// that never returns, a runc init waiting on D-Bus, a snapshotter that
// stalls) shows here while every CRI read the cri package times is fine.
//
// Its source is the kubelet's Pods API (KEP-4188; beta and on by default
// from Kubernetes 1.37): a gRPC stream on a unix socket under the
// kubelet's root directory, no request to the API server. A pod counts as
// waiting for its sandbox when the kubelet reports its
// PodReadyToStartContainers condition False and has made its log
// directory, which it does just before it calls RunPodSandbox, after the
// pod's volumes are mounted: a pod waiting for a volume, or for a
// ConfigMap that does not exist, is not waiting on the runtime. Image
// pulls, init containers and CrashLoopBackOff come after the sandbox is
// ready, so none of them counts.
package podstarts
