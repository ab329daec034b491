package harness

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The one poller of hangwatch's tests: Eventually waits for a condition,
// Poll is Eventually returning an error instead of failing the test, and
// Throughout checks that a condition holds for a while. Each polls on a
// ticker, gives up at a limit and, told to watch processes the test
// started, stops at once when one of them exits, saying so. Window is a
// measurement's span, over which the watched processes must keep running.

// DefaultInterval is how often a condition is polled unless Every says
// otherwise.
const DefaultInterval = 50 * time.Millisecond

// Watched is a process whose exit ends a wait: Exited is closed once it
// has exited, and String names it (and how it ended) in the failure.
type Watched interface {
	Exited() <-chan struct{}
	String() string
}

// WaitOption changes how Eventually, Poll and Throughout poll.
type WaitOption func(*waiting)

// waiting is how one wait polls.
type waiting struct {
	every   time.Duration
	watched []Watched
	explain func() string
}

// Every polls every d instead of every DefaultInterval.
func Every(d time.Duration) WaitOption { return func(w *waiting) { w.every = d } }

// UnlessExited ends the wait, as a failure naming the process, as soon as
// one of procs exits.
func UnlessExited(procs ...Watched) WaitOption {
	return func(w *waiting) { w.watched = append(w.watched, procs...) }
}

// Explaining adds explain's answer, asked when the wait fails, to the
// failure: the last state seen, a log's tail.
func Explaining(explain func() string) WaitOption {
	return func(w *waiting) { w.explain = explain }
}

// errLimit is what until returns when the limit passed first.
var errLimit = errors.New("limit passed")

// Eventually polls cond until it holds and returns how long that took. It
// fails t, with what it waited for, after limit, or as soon as a process
// watched with UnlessExited exits.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool, opts ...WaitOption) time.Duration {
	t.Helper()
	took, err := Poll(context.Background(), limit, what, cond, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// Poll is Eventually without a test: it returns an error when limit
// passes, ctx ends or a watched process exits before cond holds.
func Poll(ctx context.Context, limit time.Duration, what string, cond func() bool, opts ...WaitOption) (time.Duration, error) {
	w := newWaiting(opts)
	took, err := w.until(ctx, limit, cond)
	switch {
	case err == nil:
		return took, nil
	case errors.Is(err, errLimit):
		return took, w.failure(fmt.Errorf("gave up after %v waiting for %s", limit, what))
	default:
		return took, w.failure(fmt.Errorf("%w after %v waiting for %s", err, took.Round(time.Millisecond), what))
	}
}

// Throughout polls cond for d and fails t the first time it does not hold,
// or when a watched process exits meanwhile.
func Throughout(t testing.TB, d time.Duration, what string, cond func() bool, opts ...WaitOption) {
	t.Helper()
	w := newWaiting(opts)
	took, err := w.until(context.Background(), d, func() bool { return !cond() })
	switch {
	case errors.Is(err, errLimit):
		return
	case err == nil:
		t.Fatal(w.failure(fmt.Errorf("%s stopped holding after %v of %v", what, took.Round(time.Millisecond), d)))
	default:
		t.Fatal(w.failure(fmt.Errorf("%w after %v of %v of %s", err, took.Round(time.Millisecond), d, what)))
	}
}

// Window waits d, the span of a measurement, failing t, with what the
// window is for, when a watched process exits meanwhile.
func Window(t testing.TB, d time.Duration, what string, opts ...WaitOption) {
	t.Helper()
	Throughout(t, d, what, func() bool { return true }, opts...)
}

func newWaiting(opts []WaitOption) *waiting {
	w := &waiting{every: DefaultInterval}
	for _, o := range opts {
		o(w)
	}
	return w
}

// until calls done every w.every until it returns true, and returns how
// long that took; errLimit when limit passes first, an error naming the
// process when a watched one exits, ctx's when it ends.
func (w *waiting) until(ctx context.Context, limit time.Duration, done func() bool) (time.Duration, error) {
	start := time.Now()
	end := time.NewTimer(limit)
	defer end.Stop()
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	exited, stop := w.firstExit()
	defer stop()
	for !done() {
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-end.C:
			return time.Since(start), errLimit
		case p := <-exited:
			return time.Since(start), fmt.Errorf("%s exited", p)
		case <-tick.C:
		}
	}
	return time.Since(start), nil
}

// firstExit sends the first watched process to exit; stop ends the
// watching.
func (w *waiting) firstExit() (exited <-chan Watched, stop func()) {
	first := make(chan Watched, 1)
	quit := make(chan struct{})
	for _, p := range w.watched {
		// Exited is asked here, not in the goroutine: a process may
		// change what it answers (containerd started again) once the
		// wait is over, and the goroutine may not have run by then.
		gone := p.Exited()
		go func() {
			select {
			case <-gone:
				select {
				case first <- p:
				default:
				}
			case <-quit:
			}
		}()
	}
	return first, func() { close(quit) }
}

// failure adds the explanation, if any, to err.
func (w *waiting) failure(err error) error {
	if w.explain == nil {
		return err
	}
	return fmt.Errorf("%w: %s", err, w.explain())
}
