package containerd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// Unit is containerd's unit under the harness's systemd, named
// as on a node.
const Unit = "containerd.service"

// systemdDefaultPath is the PATH systemd gives services.
const systemdDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// containerdUnitTemplate is the containerd.service containerd ships
// (v2.3.7 and v2.4.2 alike) with the harness's binary and configuration,
// and these changes:
//   - DefaultDependencies=no and no After=network.target dbus.service: the
//     harness's systemd has only this unit;
//   - no ExecStartPre=-/sbin/modprobe overlay: the test loads no kernel
//     module on the host (containerd's overlay snapshotter needs overlay
//     in /proc/filesystems, as the harness's own containerd does);
//   - no OOMScoreAdjust=-999: lowering an oom_score_adj needs
//     CAP_SYS_RESOURCE, which the test machine's root lacks. systemd would
//     start the unit all the same (it ignores EPERM there, "assuming
//     containerized execution"), with containerd's oom_score_adj left at
//     0, so the unit leaves out what would not apply. The configuration's
//     restrict_oom_score_adj keeps containerd from lowering its
//     containers' for the same reason;
//   - its output goes to Dir/containerd.log (there is no journal);
//   - no [Install]: the harness's target wants it.
//
// containerd's unit has had LimitNOFILE=infinity (Debian's 1.6 still has
// it); the ones the harness runs have none, so systemd's default applies
// (soft 1024, which Go raises to the hard limit at start).
const containerdUnitTemplate = `[Unit]
Description=containerd container runtime (hangwatch test harness)
Documentation=https://containerd.io
DefaultDependencies=no

[Service]
ExecStart=%[1]s --config %[2]s
Environment=PATH=%[3]s
StandardOutput=append:%[4]s
StandardError=inherit

Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5

LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
`

// containerdUnit is containerd's unit for c's binaries and directory.
func (c *Containerd) containerdUnit() (string, error) {
	bin, err := exec.LookPath(c.Bin.path("containerd"))
	if err != nil {
		return "", fmt.Errorf("containerd binary: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return "", err
	}
	path := systemdDefaultPath
	if c.Bin.Dir != "" { // containerd finds its shim on PATH
		path = c.Bin.Dir + string(os.PathListSeparator) + path
	}
	if strings.ContainsAny(bin+c.Dir+path, " \"'\\%$") {
		return "", fmt.Errorf("paths %q, %q, %q would need quoting in a unit", bin, c.Dir, path)
	}
	return fmt.Sprintf(containerdUnitTemplate, bin, c.configPath(), path, filepath.Join(c.Dir, "containerd.log")), nil
}

// StartUnderSystemd starts a systemd (systemd.Start) whose only
// unit is containerd (Unit) with bin, its state in a new temp
// dir as StartFrom's, imports the pause image and waits until CRI
// reports the runtime and network ready. The Containerd's PID, Freeze and
// Thaw follow the unit's main process across restarts; its Stop stops
// systemd too (the Systemd's own Stop may be called as well).
func StartUnderSystemd(ctx context.Context, bin Binaries) (*Containerd, *systemd.Systemd, error) {
	return StartUnderSystemdWith(ctx, bin, false)
}

// StartUnderSystemdWith is StartUnderSystemd, with
// runc's systemd cgroup driver when systemdCgroup (Containerd.SystemdCgroup),
// under a systemd with cgroups of its own (systemd.StartWithOwnCgroups), so
// that the slices and scopes runc and a kubelet make over D-Bus are where
// they look for them.
func StartUnderSystemdWith(ctx context.Context, bin Binaries, systemdCgroup bool) (*Containerd, *systemd.Systemd, error) {
	if err := systemd.RequireParts(); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "hwc-")
	if err != nil {
		return nil, nil, err
	}
	c := newContainerd(dir, bin, Unit)
	c.SystemdCgroup = systemdCgroup
	if err := c.startUnderSystemd(ctx); err != nil {
		c.Stop()
		return nil, nil, err
	}
	return c, c.UnitSystemd, nil
}

func (c *Containerd) startUnderSystemd(ctx context.Context) error {
	if err := c.writeConfig(); err != nil {
		return err
	}
	unit, err := c.containerdUnit()
	if err != nil {
		return err
	}
	if c.conn, err = c.StartSystemdUnit(ctx, unit, c.Endpoint, c.logTail, c.SystemdCgroup); err != nil {
		return err
	}
	tarPath := filepath.Join(c.Dir, "pause.tar")
	if err := harness.BuildPauseImage(tarPath); err != nil {
		return err
	}
	if err := c.ImportImage(ctx, tarPath); err != nil {
		return err
	}
	return c.waitImage(ctx, harness.PauseImage)
}

// startUnit writes containerd's unit for c.Bin (an in-place upgrade when
// it is another version), starts it and waits until it is ready.
func (c *Containerd) startUnit(ctx context.Context) error {
	if err := c.writeConfig(); err != nil {
		return err
	}
	unit, err := c.containerdUnit()
	if err != nil {
		return err
	}
	if err := c.UnitSystemd.SetUnit(ctx, c.Unit, unit); err != nil {
		return err
	}
	if err := c.UnitSystemd.StartUnit(ctx, c.Unit); err != nil {
		return err
	}
	return c.waitReady(ctx)
}
