package main

import (
	"context"
	"crypto/sha256"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/internal/filewatch"
	"github.com/hangwatch/hangwatch/options"
	"github.com/hangwatch/hangwatch/repair"
)

// repairConfigPoll is how often `hangwatch repair` looks at its --config.
const repairConfigPoll = 2 * time.Second

func newRepairCommand() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "repair",
		Short: "Restart a hung runtime or a kubelet that stopped answering, through systemd, on the agent's view",
		Long: `repair is the privileged half of the recovery ladder's second rung, in a
process of its own: it needs hostPID and systemd's private socket, and it
listens on no port and holds no API credential. Every second it reads the
agent's view (the node's conditions and how long the runtime and the
kubelet have given no answer) over repair.agentSocket, the Unix socket that
` + "`hangwatch run`" + ` serves, and restarts what the checks of docs/install.md
("Repair") allow. The agent writes its Events, reads the Node for
maintenance, takes the fleet's slots and exports its metrics. Without the
view nothing is restarted. It takes the same --config and flags as run and
reloads the repair settings when the file changes and on SIGHUP; SIGTERM or
SIGINT stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.NeverBlockOnLogs(os.Stderr); err != nil {
				return err
			}
			return withConfig(cmd, configPath, func(loader *config.Loader, loaded *config.Loaded) error {
				return runRepair(cmd.Context(), loader, loaded)
			})
		},
	}
	addRunFlags(cmd.Flags(), &configPath)
	return cmd
}

func runRepair(ctx context.Context, loader *config.Loader, loaded *config.Loaded) error {
	s := loaded.Repair
	if s.AgentSocket == "" {
		return fieldError("repair.agentSocket", `""`, "must name the agent's socket (hangwatch run serves its view there)")
	}
	ep, err := cri.ResolveEndpoint(options.Endpoint(loaded.Runtime))
	if err != nil {
		return err
	}
	m, link := repair.NewMetrics(), repair.NewAgentLink(s.AgentSocket)
	r := repair.New(repair.Options{Settings: options.Repair(s), Clock: clock.RealClock{}, Verdicts: link.Verdicts,
		Unanswered:  map[repair.Target]repair.Silence{repair.TargetRuntime: link.Silence(repair.TargetRuntime), repair.TargetKubelet: link.Silence(repair.TargetKubelet)},
		Maintenance: link.Maintenance, Fleet: link, CRISocket: ep.Address, KubeletHealthzPort: repair.PortOf(loaded.Kubelet.HealthzURL),
		Metrics: m, Notify: link})
	f := repair.NewFencer(repair.FencerOptions{Settings: options.Fence(s), Clock: clock.RealClock{}, Verdicts: link.Verdicts,
		Silence: link.LifecycleSilence(), GivenUp: func() (bool, string) { return r.GivenUp(repair.TargetRuntime) },
		Restarted: func() bool { return r.Restarted(repair.TargetRuntime) },
		Probe:     repair.ProbeRuntime(ep.Address), Maintenance: link.Maintenance, Link: link, Notify: link})
	klog.InfoS("hangwatch repair running", "agentSocket", s.AgentSocket, "endpoint", ep.Address, "enabled", s.Enabled, "dryRun", s.DryRun,
		"restartRuntimeAfter", s.RestartRuntimeAfter.Duration, "restartKubeletAfter", s.RestartKubeletAfter.Duration,
		"maxRestartsPerHour", s.MaxRestartsPerHour, "systemdSocket", s.SystemdSocket, "stateFile", s.StateFile,
		"fence", s.Fence, "fenceDryRun", s.FenceDryRun, "cgroupRoot", s.CgroupRoot, "kubeletRootDir", s.KubeletRootDir)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if loader.Path != "" {
		go reloadRepair(ctx, loader, loaded.Sum, r, f)
	}
	link.Run(ctx, r, f, m)
	klog.InfoS("Shutting down")
	return nil
}

// reloadRepair applies the repair settings of --config when the file
// changes (polled) and on SIGHUP (filewatch); a file that fails the checks
// of `config check` is refused and the running settings stay.
func reloadRepair(ctx context.Context, loader *config.Loader, sum [sha256.Size]byte, r *repair.Repairer, f *repair.Fencer) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	w := filewatch.Watcher{Path: loader.Path, Read: config.ReadFile, Poll: repairConfigPoll, Clock: clock.RealClock{}, Signal: hup,
		Apply: func(raw []byte) error {
			loaded, err := loader.LoadBytes(raw)
			if err != nil {
				return err
			}
			r.Update(options.Repair(loaded.Repair))
			f.Update(options.Fence(loaded.Repair))
			return nil
		},
		Refused: func(err error) {
			klog.ErrorS(err, "Config reload refused; the running repair settings stay", "path", loader.Path)
		}}
	w.RunningSum(sum)
	w.Run(ctx)
}
