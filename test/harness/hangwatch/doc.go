// Package hangwatch runs what the tests are about on the harness's parts:
// the agent as a daemon or a static pod beside a kubelet, hangwatch-remedy
// and hangwatch repair, with their identities and policies, the Nodes
// they write (conditions, leases, the kernel log lines they read), and the
// suites' TestMain (Main), which builds them once and shares a control
// plane and a containerd. It sits above the runtime, systemd and kubelet
// parts and below test/harness/cluster.
package hangwatch
