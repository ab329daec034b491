// Package harness starts the real parts hangwatch's tests run against: a
// containerd from the machine's packages on a socket in a temp dir, with a
// locally built pause image and real pod sandboxes and containers made
// through CRI, and, for what systemd does to a runtime (restarts), a real
// systemd as PID 1 of namespaces of its own running containerd as its
// unit. Every process it starts is stopped by PID when done.
package harness
