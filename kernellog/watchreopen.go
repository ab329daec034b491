package kernellog

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
)

// A kernel log whose read fails is opened again after reopenMin, doubling
// to reopenMax; Check fails once it has been down for downLimit.
const (
	reopenMin = time.Second
	reopenMax = 30 * time.Second
	downLimit = time.Minute
)

// follow reads records as they are logged until ctx ends. A failed read
// closes the log and opens it again with backoff, reading what was logged
// since the last good read that the ring still holds.
func (w *Watch) follow(ctx context.Context) {
	for {
		err := w.src.Follow(ctx, 500*time.Millisecond, w.handle, w.tick)
		if err == nil || ctx.Err() != nil {
			return
		}
		w.markDown(err)
		if !w.reopen(ctx) {
			return
		}
	}
}

func (w *Watch) markDown(err error) {
	klog.ErrorS(err, "Reading the kernel log failed; opening it again with backoff", "retryIn", reopenMin)
	w.mu.Lock()
	_ = w.src.Close()
	w.downSince = w.clk.Now()
	w.mu.Unlock()
}

// reopen opens the log again, backing off, until it works (true) or ctx
// ends (false).
func (w *Watch) reopen(ctx context.Context) bool {
	for delay := reopenMin; ; delay = min(2*delay, reopenMax) {
		t := w.clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
		src, err := w.openSince()
		if err == nil {
			w.markUp(src)
			return true
		}
		klog.V(2).InfoS("Kernel log still unreadable", "err", err, "retryIn", min(2*delay, reopenMax))
	}
}

// openSince opens the log with a lookback reaching back to the last good
// read, and reads what it holds from then.
func (w *Watch) openSince() (Source, error) {
	src, err := w.open(min(w.lookback, w.clk.Since(w.lastRead)))
	if err != nil {
		return nil, err
	}
	if err := src.ReadAvailable(w.handle); err != nil {
		_ = src.Close()
		return nil, err
	}
	return src, nil
}

func (w *Watch) markUp(src Source) {
	w.mu.Lock()
	down := w.clk.Since(w.downSince)
	w.src, w.last, w.downSince = src, KmsgStats{}, time.Time{}
	w.mu.Unlock()
	klog.InfoS("Reading the kernel log works again", "downFor", down.Round(time.Second))
}

// Check fails while the kernel log has been unreadable for longer than
// downLimit; /healthz asks it.
func (w *Watch) Check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.downSince.IsZero() {
		return nil
	}
	if down := w.clk.Since(w.downSince); down > downLimit {
		return fmt.Errorf("kernel log unreadable for %v (limit %v)", down.Round(time.Second), downLimit)
	}
	return nil
}
