// Package csi runs the harness's CSI driver (test/csidriver) as a
// cluster runs one: its controller instance with the real
// external-attacher and external-provisioner against a harness control
// plane, and a node instance with its registrar on each kubelet (or as
// systemd units), each call logged for the tests to read. It is a part of
// the harness of its own: it uses test/harness's control plane, kubelet,
// systemd and processes, and nothing of the harness uses it.
package csi
