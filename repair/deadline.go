package repair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// The deadlines of an attempt's steps. Each step has its own, so a slow
// one (an API server that takes seconds to answer the maintenance read)
// cannot spend the time of those after it: the kill always has a whole
// killTimeout of its own.
const (
	// systemdTimeout bounds the checks made through systemd and /proc
	// (locate), so a wedged systemd cannot hold the repairer.
	systemdTimeout = 5 * time.Second
	// maintenanceTimeout bounds the read of the Node's maintenance
	// conditions; past it repair goes on as if the Node said nothing (a
	// node cut off from the API server heals within its own budget).
	maintenanceTimeout = 2 * time.Second
	// fleetTimeout bounds the ask for a fleet slot; past it this node's
	// own budget decides.
	fleetTimeout = 3 * time.Second
	// killTimeout bounds the kill itself, from when it is sent.
	killTimeout = 5 * time.Second
)

// errStepDeadline is the cause of a step whose deadline passed.
var errStepDeadline = errors.New("deadline passed")

// withDeadline is ctx cut off d from now on clk (the injected clock, so
// a fake clock's step ends it): its cause then names what and d, and
// wraps context.DeadlineExceeded. A nil clk is the real clock.
func withDeadline(ctx context.Context, clk clock.Clock, d time.Duration, what string) (context.Context, context.CancelFunc) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := clk.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			cancel(fmt.Errorf("%s: %w after %s: %w", what, errStepDeadline, d, context.DeadlineExceeded))
		case <-ctx.Done():
			t.Stop()
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// cause is why ctx ended, or err when it has not.
func cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return err
}
