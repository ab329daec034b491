// Package fence is the node side of hangwatch's fence, the recovery
// ladder's fourth rung, in the repair process: it carries out the Node's
// fence request, stopping the chosen pods' processes through their cgroups,
// releasing their volumes and proving that no mount namespace on the node
// still holds them.
//
// The Fencer reads the request through the agent's link (nodelink), checks
// it again for itself, has the agent delete the pods it killed before any
// volume is released, and reports; the agent's side (reading the Node,
// deleting the pods as the node, the attestation) is agent/fencelink.go,
// and the request and the attestation on the Node are internal/fencing's.
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
// # Releasing the volumes, and the proof
//
// A volume is judged released by what is mounted, never by where it is
// expected to be mounted:
//
//  1. Before the kill, [Mounts.RecordPodVolumes] records every mount of the
//     pod's volumes (under the kubelet's pods/<uid>/volumes/ and
//     volume-subpaths/) and of its CSI volumes' staging directories, with
//     each mount's device (mountinfo's major:minor) and, for a network file
//     system, its type and source. Those are the volumes' identities,
//     except any the node also mounts for itself, outside every pod's
//     volumes and the CSI staging directories (the root disk behind an
//     emptyDir's subPath bind mount, an export mounted on the host): such a
//     node-shared identity names no volume and is left out, saying why.
//  2. [Mounts.ReleaseCSI] has each CSI driver's node plugin unpublish the
//     volume and, at its last use on the node, unstage it, as the kubelet
//     would. The driver's socket is found as the kubelet finds it, through
//     plugin registration (the sockets under plugins_registry/, asked
//     GetInfo), then at plugins/<driver>/csi.sock; the staging paths are
//     the ones the kubelet recorded (vol_data.json beside globalmount), in
//     the current layout and the older plugins/kubernetes.io/csi/pv/<pv>/.
//     A staged volume that cannot be unstaged through its driver (no socket
//     found, a refusal, a call past its deadline, a mount left behind) is
//     [ErrImpossible].
//  3. [Mounts.UnmountPod] unmounts what is left of the pod's volume mounts,
//     deepest first, and never lazily: a lazy unmount (MNT_DETACH) only
//     removes the mount from the tree while the file system stays in use by
//     whoever still has it open, which is exactly what a fence must rule
//     out, and it hides that use from any later check. A busy mount is
//     [ErrImpossible].
//  4. After the release, [Mounts.HeldAnywhere] reads the mount table of
//     every mount namespace on the node and names every mount of a
//     recorded identity, wherever it is mounted: a shell that joined the
//     container's namespace and holds the volume at /data is found as
//     surely as a mount under the kubelet's directories. A namespace pinned
//     by a bind mount of its nsfs file, with no process in it, cannot be
//     read, and makes the proof incomplete. A tmpfs's device number is
//     anonymous and handed to the next tmpfs mounted once the volume's is
//     gone; where the kernel reports each tmpfs's own f_fsid, a mount with
//     the recorded device but another f_fsid is that stranger, not the
//     volume (superblock.go).
//
// # Deadlines
//
// Every CSI and plugin registration call has its own deadline
// ([Mounts.CallTimeout], within the caller's context), and UnmountPod and
// HeldAnywhere end with their context: a hung node plugin, or an umount2
// stuck in the kernel on a dead NFS server or iSCSI target, makes the fence
// impossible within its deadline instead of wedging the process that
// serves the node. A stuck umount2 cannot be interrupted: its goroutine
// stays until the kernel returns, and a later fence waits for it rather
// than starting another, so at most one is stuck per mount point.
package fence
