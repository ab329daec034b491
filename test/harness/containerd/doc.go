// Package containerd runs containerd 2.x from the pinned build (or the
// upgrade pin) on a socket in a temp dir, as the harness's child or as a
// unit of a harness systemd, with a locally built pause image and real pod
// sandboxes and containers made through CRI; and a containerd whose
// RuntimeClass handler or CNI plugin hangs (StartHangingT). It is a part of
// the harness of its own: it uses test/harness's processes, systemd and
// what both runtimes share, and nothing of the harness core uses it.
package containerd
