package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
)

// KubeletUnit is the kubelet's unit under the harness's systemd, named as
// on a node.
const KubeletUnit = "kubelet.service"

// kubeletUnitTemplate is the kubelet.service kubeadm's packages ship
// (kubernetes/release, cmd/krel/templates/latest/kubelet/kubelet.service)
// with the harness's binary and command line, and these changes:
//   - ExecStart is the whole command line StartVia runs (prepare):
//     kubeadm's drop-in, 10-kubeadm.conf, replaces the unit's bare
//     ExecStart=/usr/bin/kubelet with one adding flags from environment
//     files; the harness writes the flags out instead;
//   - DefaultDependencies=no and no Wants= or After=network-online.target:
//     the harness's systemd has no such target (its network is the
//     host's);
//   - its output goes to Dir/kubelet.log (there is no journal), as the
//     harness's child kubelet's does;
//   - no [Install]: StartUnderSystemd starts it.
//
// Kept as shipped: Type=simple (the default; the kubelet does not notify),
// KillMode=control-group (the default), Restart=always, RestartSec=10 and
// StartLimitInterval=0 (in [Service], the old spelling systemd still reads
// as [Unit] StartLimitIntervalSec=: restarts are never rate-limited). No
// Environment=: the kubelet gets systemd's default PATH, as on a node, and
// none of the test's environment.
const kubeletUnitTemplate = `[Unit]
Description=kubelet: The Kubernetes Node Agent (hangwatch test harness)
Documentation=https://kubernetes.io/docs/
DefaultDependencies=no

[Service]
ExecStart=%[1]s
StandardOutput=append:%[2]s
StandardError=inherit
Restart=always
StartLimitInterval=0
RestartSec=10
`

// StartUnderSystemd starts a kubelet for node as KubeletUnit of the
// systemd running c (containerd.StartUnderSystemd), with the configuration
// and command line StartVia gives the harness's child kubelet
// (c.Endpoint, $HANGWATCH_KUBELET_FEATURE_GATES), and waits until its
// /healthz answers and the Node is Ready.
//
// It runs as on a node: in systemd's PID and mount namespace, the
// runtime's, so the mounts either makes under the kubelet's root dir are
// the other's; its dirs are temp dirs on the host's file system, seen
// alike from the test and from the namespace; the host's network. Its
// cgroups are the harness's child kubelet's too (the cgroupfs driver, no
// QoS cgroups): the unit's cgroup is in name=systemd alone, under the
// systemd's own root, and the kubelet stays in the test's memory and cpu
// cgroups (StartUnderSystemdWith gives it pod cgroups).
//
// The Kubelet's PID, Freeze and Thaw follow the unit's main process
// across restarts; its Stop stops the unit (c's Stop stops systemd).
func StartUnderSystemd(ctx context.Context, cp *harness.ControlPlane, c *containerd.Containerd, node string) (*Kubelet, error) {
	return StartUnderSystemdWith(ctx, cp, c, node, UnitOptions{})
}

// UnitOptions change how StartUnderSystemdWith's kubelet
// runs; the zero value is StartUnderSystemd's.
type UnitOptions struct {
	// PodCgroups gives the kubelet pod cgroups (cgroupsPerQOS) under a
	// cgroup root of its own, as StartWithPodCgroupsT does: made
	// in every hierarchy before the kubelet starts, and removed, with what
	// still runs there killed, by its Stop.
	PodCgroups bool
	// CgroupDriver is the kubelet's cgroupDriver: "cgroupfs" when empty,
	// or "systemd", which needs a containerd with runc's systemd driver
	// (containerd.StartUnderSystemdWith), under a systemd with cgroups of
	// its own. With PodCgroups the kubelet then makes kubepods.slice and
	// its QoS and pod slices as transient units of that systemd over
	// D-Bus, in every hierarchy, at the root of that systemd's cgroups
	// (on the host: under its cgroup root, hangwatch-hws-…), and its
	// Stop leaves them to systemd's.
	CgroupDriver string
	// NodeLayout runs the kubelet on a node's ports (10250, and 10248 for
	// /healthz) with its certificates in its root dir's pki/, as a kubeadm
	// node has them: a pod's hostPath of /var/lib/kubelet/pki/kubelet.crt
	// and the shipped configs' URLs find them. One such kubelet at a time
	// on a machine (the installs suite's node A).
	NodeLayout bool
}

// StartUnderSystemdWith is StartUnderSystemd with options.
// With PodCgroups the kubelet's cgroup root is made in every hierarchy of
// systemd's /sys/fs/cgroup, which has those the host leaves unmounted
// (Kubelet.cgroupFS), and PodCgroup and CgroupPids look there.
func StartUnderSystemdWith(ctx context.Context, cp *harness.ControlPlane, c *containerd.Containerd, node string, o UnitOptions) (*Kubelet, error) {
	switch o.CgroupDriver {
	case "", "cgroupfs":
	case "systemd":
		if !c.SystemdCgroup {
			return nil, errors.New("the systemd cgroup driver needs containerd's too (containerd.StartUnderSystemdWith)")
		}
	default:
		return nil, fmt.Errorf("cgroup driver %q: want cgroupfs or systemd", o.CgroupDriver)
	}
	sd := c.Systemd()
	if sd == nil {
		return nil, errors.New("containerd does not run under systemd (containerd.StartUnderSystemd)")
	}
	if state, err := sd.ActiveState(ctx, KubeletUnit); err != nil {
		return nil, err
	} else if state != "inactive" && state != "failed" {
		return nil, fmt.Errorf("systemd %d already has %s %s: give each kubelet a containerd of its own", sd.PID(), KubeletUnit, state)
	}
	unlock, err := lockSysctls(false)
	if err != nil {
		return nil, err
	}
	if err := setKubeletSysctls(); err != nil {
		unlock()
		return nil, err
	}
	k, bin, err := newKubelet(node, os.Getenv("HANGWATCH_KUBELET_FEATURE_GATES"))
	if err != nil {
		unlock()
		return nil, err
	}
	k.sd, k.unlockSysctls, k.CgroupDriver, k.nodeLayout = sd, unlock, o.CgroupDriver, o.NodeLayout
	if o.PodCgroups && o.CgroupDriver == "systemd" {
		k.systemdPodCgroups = true
	} else if o.PodCgroups {
		k.CgroupRoot = podCgroupRoot(node)
		if err := makeCgroups(k.cgroupFS(), k.CgroupRoot); err != nil {
			k.Stop()
			return nil, err
		}
	}
	if err := k.startUnit(ctx, bin, cp, c.Endpoint); err != nil {
		err = fmt.Errorf("%w\n%s", err, k.logTail())
		k.Stop()
		return nil, err
	}
	return k, nil
}

func (k *Kubelet) startUnit(ctx context.Context, bin string, cp *harness.ControlPlane, runtimeEndpoint string) error {
	args, err := k.prepare(cp, runtimeEndpoint)
	if err != nil {
		return err
	}
	unit, err := kubeletUnit(bin, args, filepath.Join(k.Dir, "kubelet.log"))
	if err != nil {
		return err
	}
	if err := k.sd.SetUnit(ctx, KubeletUnit, unit); err != nil {
		return err
	}
	if err := k.sd.StartUnit(ctx, KubeletUnit); err != nil {
		return err
	}
	// The start job is done once the kubelet is forked (Type=simple).
	if k.unitPID, err = k.sd.MainPID(ctx, KubeletUnit); err != nil {
		return err
	}
	if k.unitPID == 0 {
		return fmt.Errorf("%s has no main process after its start", KubeletUnit)
	}
	return k.waitStarted(ctx, cp)
}

// kubeletUnit is the kubelet's unit running bin with args, its output
// appended to logPath.
func kubeletUnit(bin string, args []string, logPath string) (string, error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	words := append([]string{bin}, args...)
	for _, w := range slices.Concat(words, []string{logPath}) {
		// No quoting, escapes, specifiers or variables: each word as is.
		if w == "" || strings.ContainsAny(w, " \t\n\"'\\%$;") {
			return "", fmt.Errorf("kubelet argument %q would need quoting in a unit", w)
		}
	}
	return fmt.Sprintf(kubeletUnitTemplate, strings.Join(words, " "), logPath), nil
}

// stopUnit stops the kubelet's unit (thawed first, though systemd follows
// its SIGTERM with a SIGCONT) and waits for the job. Once systemd is
// stopped (the containerd's Stop), the kubelet has ended with it. What the
// kubelet mounted under Dir is in systemd's mount namespace: removing Dir
// from the host detaches it there.
func (k *Kubelet) stopUnit() {
	select {
	case <-k.sd.Exited():
		return
	default:
	}
	_ = k.Thaw()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = k.sd.StopUnit(ctx, KubeletUnit)
}
