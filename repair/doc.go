// Package repair is the second rung of hangwatch's recovery ladder: on the
// node, it restarts a container runtime that hangs as a whole, or a
// kubelet that stopped answering on the node, through systemd's D-Bus API,
// when systemd will start the unit again and the process can be killed.
//
// It reads conditions (a condition's status and reason), never the signals
// themselves, and decides on the agent's clock. Every attempt, whether it
// acts, is refused or finds repair impossible, is counted in
// hangwatch_repairs_total and told through the Notifier; nothing runs
// unless the configuration turns it on.
package repair
