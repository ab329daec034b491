package fence

import (
	"context"
	"errors"
	"fmt"
)

// ErrImpossible marks a fence that cannot be done safely (a process in D
// state, a cgroup that will not freeze or empty, a busy mount).
var ErrImpossible = errors.New("the fence cannot be done safely")

// ctxFailure says that ctx ended before what msg describes was done. It wraps
// ctx.Err(), and ErrImpossible when the deadline passed: the kernel had the
// whole budget and did not get there. A cancelled ctx (the agent stopping)
// proves nothing about the cgroup, so it is not marked impossible.
func ctxFailure(ctx context.Context, msg string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w: %w", msg, ErrImpossible, ctx.Err())
	}
	return fmt.Errorf("%s: %w", msg, ctx.Err())
}
