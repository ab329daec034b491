package harness

import (
	"context"
	"time"
)

// Scheduler is a real kube-scheduler with its default profile, so pods the
// controllers create land on the harness's kubelets, and not on a node
// tainted NoSchedule.
type Scheduler struct {
	proc *Process
}

// StartScheduler starts it against cp and waits for /healthz.
func StartScheduler(ctx context.Context, cp *ControlPlane) (*Scheduler, error) {
	p, err := startComponent(ctx, cp, "kube-scheduler")
	if err != nil {
		return nil, err
	}
	return &Scheduler{proc: p}, nil
}

// Stop stops it by PID.
func (s *Scheduler) Stop() { s.proc.Stop(10 * time.Second) }
