// Package cluster puts the harness's parts together as the suites need
// them whole: the fence cluster (a control plane with the scheduler and
// controller-manager, nodes of kubelet and containerd each with hangwatch,
// hangwatch-remedy, the CSI driver and StatefulSets that write to their
// volumes) and the installs as shipped (the static pod, the DaemonSet and
// the Helm chart, applied with only installs-patches.yaml on top, and
// taken through the ladder). It sits above every part: it imports them,
// and none of them imports it.
package cluster
