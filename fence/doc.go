// Package fence is the node side of hangwatch's fence: it stops every process
// of chosen Kubernetes pods through the kernel's cgroups, then unmounts their
// volumes, and proves that no mount namespace on the node still holds them.
//
// # Stopping the processes
//
// A pod's processes live in its cgroup and the cgroups below it (one per
// container). [Hierarchy.PodCgroups] finds those directories for both kubelet
// cgroup drivers (cgroupfs: ".../pod<uid>", systemd:
// "...-pod<uid_with_underscores>.slice"), and [Killer.Kill] empties one:
//
//   - cgroup v1: write FROZEN to the freezer controller's freezer.state and
//     wait until it reads FROZEN, send SIGKILL to every process of the
//     subtree, then write THAWED so that the kills are delivered;
//   - cgroup v2: write 1 to cgroup.freeze and wait for "frozen 1" in
//     cgroup.events, then write 1 to cgroup.kill (Linux 5.14 and later) or,
//     on older kernels, send SIGKILL to every process; then thaw.
//
// Either way Kill returns only when the subtree holds no process any more.
//
// Why freeze first: reading cgroup.procs and signalling its pids is not
// atomic. A process of a running cgroup can fork between the read and the
// kill, and its child, absent from the list that was read, escapes. A frozen
// cgroup cannot fork, so the list read while it is frozen is the whole of it.
//
// Why a task in uninterruptible sleep (state D) makes the fence impossible:
// SIGKILL is only acted on when a task returns towards user space, and a task
// in D state is blocked inside the kernel (typically on storage or a network
// file system) until the operation it waits for completes. It cannot be
// frozen, the signal cannot end it, so the cgroup would never empty, and its
// pending I/O may still write to the pod's volume after the fence claims the
// pod is stopped. Kill therefore looks at every task before it freezes or
// signals anything, and refuses (with [ErrImpossible]) having done nothing.
//
// # Unmounting the volumes
//
// [Mounts.UnmountPod] unmounts the pod's volume mounts (under the kubelet's
// pods/<uid>/volumes/ and pods/<uid>/volume-subpaths/), deepest first, and
// never lazily: a lazy unmount (MNT_DETACH) only removes the mount from the
// tree while the file system stays in use by whoever still has it open, which
// is exactly what a fence must rule out, and it hides that use from any later
// check. A busy mount is reported as [ErrImpossible] instead.
// [Mounts.HeldElsewhere] then reads the mount table of every mount namespace
// on the node and lists any that still holds one of the pod's volumes.
package fence
