package crio

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// Unit is CRI-O's unit under the harness's systemd, named as on a
// node.
const Unit = "crio.service"

// crioUnitTemplate is the crio.service CRI-O v1.36.3 ships
// (contrib/systemd/crio.service) with the harness's binary, configuration
// and environment, and these changes:
//   - DefaultDependencies=no, no Wants/After=network-online.target and no
//     Before=kubelet.service: the harness's systemd has only this unit;
//   - no EnvironmentFile=-/etc/sysconfig/crio: the options are inline;
//   - no OOMScoreAdjust=-999: this machine's root may not lower it
//     (systemd would ignore the failure, "assuming containerized
//     execution"), so the unit leaves out what would not apply;
//   - its output goes to Dir/crio.log (there is no journal);
//   - no [Install]: the harness's target wants it.
//
// Kept as shipped, and what they mean for a repair: Type=notify,
// Restart=on-failure (a SIGKILL is a failure, so systemd starts it
// again) after RestartSec=10, WatchdogSec=60s (CRI-O pings the watchdog
// only while a CRI Status call to itself answers, so a wedged CRI-O is
// killed by systemd after a minute on its own), and no KillMode, so
// systemd's default control-group: once the main process is gone, every
// other process in the unit's cgroup is killed too. With CRI-O's
// cgroupfs manager, as here, each conmon stays in that cgroup; with its
// default systemd manager, conmon has a scope of its own.
const crioUnitTemplate = `[Unit]
Description=Container Runtime Interface for OCI (CRI-O) (hangwatch test harness)
Documentation=https://github.com/cri-o/cri-o
DefaultDependencies=no

[Service]
Type=notify
Environment=GOTRACEBACK=crash
Environment=%[3]s
ExecStart=%[1]s %[2]s
ExecReload=/bin/kill -s HUP $MAINPID
StandardOutput=append:%[4]s
StandardError=inherit
TasksMax=infinity
LimitNPROC=1048576
LimitCORE=infinity
TimeoutStartSec=0
Restart=on-failure
RestartSec=10
WatchdogSec=60s
%[5]s`

// crioUnit is crio.service for c's binaries and directory.
func (c *CRIO) crioUnit() (string, error) {
	args := c.crioArgs()
	for i, a := range args {
		if a == "" {
			args[i] = `""` // --config-dir "": no drop-ins
		}
	}
	line := strings.Join(args, " ")
	if strings.ContainsAny(c.Bin.path("crio")+c.Dir, " \"'\\%$") {
		return "", fmt.Errorf("paths %q, %q would need quoting in a unit", c.Bin.path("crio"), c.Dir)
	}
	killMode := ""
	if c.killMode != "" {
		killMode = "KillMode=" + c.killMode + "\n"
	}
	return fmt.Sprintf(crioUnitTemplate, c.Bin.path("crio"), line, strings.Join(c.crioEnv(), " "), filepath.Join(c.Dir, "crio.log"), killMode), nil
}

// StartUnderSystemd starts a systemd (systemd.Start) whose only unit
// is CRI-O (Unit), its state in a new temp dir as Start's, pulls
// the pause image and waits until CRI reports the runtime ready. killMode
// is the unit's KillMode=, "" for the shipped unit's (none: systemd's
// control-group). The CRIO's PID, Freeze and Thaw follow the unit's main
// process across restarts; its Stop stops systemd too.
func StartUnderSystemd(ctx context.Context, killMode string) (*CRIO, *systemd.Systemd, error) {
	if err := systemd.RequireParts(); err != nil {
		return nil, nil, err
	}
	bin, err := FindBinaries()
	if err != nil {
		return nil, nil, err
	}
	dir, err := harness.RuntimeDir("hwo-")
	if err != nil {
		return nil, nil, err
	}
	c := newCRIO(dir, bin, Unit)
	c.killMode = killMode
	if err := c.startUnderSystemd(ctx); err != nil {
		c.Stop()
		return nil, nil, err
	}
	return c, c.UnitSystemd, nil
}

func (c *CRIO) startUnderSystemd(ctx context.Context) error {
	if err := c.prepare(); err != nil {
		return err
	}
	unit, err := c.crioUnit()
	if err != nil {
		return err
	}
	if c.conn, err = c.StartSystemdUnit(ctx, unit, c.Endpoint, c.logTail, false); err != nil {
		return err
	}
	return c.pullPause(ctx)
}

// pullPause has CRI-O pull the pause image from the harness's registry.
func (c *CRIO) pullPause(ctx context.Context) error {
	if _, err := c.conn.Image.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: harness.PauseImage}}); err != nil {
		return fmt.Errorf("CRI-O pull %s from the harness's registry: %w\n%s", harness.PauseImage, err, c.logTail())
	}
	return nil
}
