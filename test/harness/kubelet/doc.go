// Package kubelet runs real kubelets against a harness control plane and
// a harness runtime (NodeRuntime: containerd or CRI-O), as the runtime's
// child or as a unit of its systemd, with pod cgroups where a test needs
// them. It is a part of the harness of its own: it uses test/harness's
// control plane, processes and runtimes, and nothing of the harness core
// uses it.
package kubelet
