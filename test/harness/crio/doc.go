// Package crio runs CRI-O from the pinned build, with Debian's conmon and
// crun, on a socket in a temp dir, as the harness's child or as a unit of
// a harness systemd, its pause image served from a local registry. It is
// a part of the harness of its own: it uses test/harness's processes,
// systemd and what both runtimes share, and nothing of the harness core
// uses it.
package crio
