// Package cri times the CRI calls the kubelet depends on, directly over the
// runtime's gRPC socket, and reports calls that have not returned while they
// are still in flight.
//
// A Prober runs one probe cycle at a time: Version, Status, ListPodSandbox,
// ListContainers and ImageFsInfo concurrently, then PodSandboxStatus and
// ContainerStatus for a bounded sample of objects. The caller never waits for
// a call longer than the per-call timeout; a call that has not answered by
// then is reported as timed out and stays tracked as in flight (with its age)
// until it returns or its lifetime ends. A method with a call still in flight
// is not called again, so a hung runtime is not given more work.
package cri
