// Package harness is the core of the tests' harness: the control plane
// (etcd, kube-apiserver, the controller-manager and scheduler), processes
// started and stopped by PID, the poller, free ports, HTTP, the images
// and binaries the setup command built, metrics, the lanes that let the
// integration tests run side by side, and what both runtimes share. Each
// real part is a package below it (systemd, containerd, crio, kubelet,
// csi, alerting, nhc, stuckdir, hangwatch, cluster: docs/testing.md), which
// uses the core and which the core never uses.
package harness
