package systemd

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
)

// nodeDirsScript gives systemd's mount namespace a node's own directories
// where a node keeps them: a tmpfs on /var/lib (so /var/lib/hangwatch and
// the mount points are the namespace's, nothing made on the host), the
// kubelet's root dir ($1) at /var/lib/kubelet and the runtime's dir ($2)
// at /run/<runtime> ($3; /run is already the namespace's tmpfs), and the
// kubelet's podLogsDir ($4) at /var/log/pods (on a tmpfs on /var/log). They are
// made after / is shared there, so each bind is a peer of its source: what
// the kubelet mounts under its root dir is under /var/lib/kubelet too, and
// an unmount under either reaches the other.
const nodeDirsScript = `set -e
mount -t tmpfs -o mode=755 tmpfs /var/lib
mkdir -p /var/lib/kubelet /var/lib/hangwatch "$3"
mount --rbind "$1" /var/lib/kubelet
mount --rbind "$2" "$3"
mount -t tmpfs -o mode=755 tmpfs /var/log
mkdir -p /var/log/pods
mount --rbind "$4" /var/log/pods
`

// GiveNodeDirs makes systemd's namespace look like a node's file system
// to what runs in it (the kubelet's pods' hostPath volumes among them):
// kubeletRoot at /var/lib/kubelet, RuntimeDir (holding the runtime's
// socket) at runtimeRun (/run/containerd or /run/crio), podLogs at
// /var/log/pods, and an empty /var/lib/hangwatch. The host's file system
// is unchanged.
func (s *Systemd) GiveNodeDirs(ctx context.Context, kubeletRoot, RuntimeDir, runtimeRun, podLogs string) error {
	cmd := exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(s.pid), "-m", "--", "sh", "-c", nodeDirsScript, "sh",
		kubeletRoot, RuntimeDir, runtimeRun, podLogs)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("node dirs in systemd %d's namespace: %w\n%s", s.pid, err, out)
	}
	return nil
}
