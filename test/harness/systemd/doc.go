// Package systemd runs a real systemd as PID 1 of namespaces of its own
// (unshare --pid --fork --mount --mount-proc, a private /run), with only
// the test's units, and talks to it over its private D-Bus socket; and
// RuntimeProcess, a runtime's daemon run as the harness's child or as such
// a unit, which the containerd and CRI-O parts embed. It is a part of the
// harness of its own: it uses test/harness's processes and poller, and
// nothing of the harness core uses it.
package systemd
