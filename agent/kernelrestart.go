package agent

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/kernellog"
)

// A kernel log whose read fails is opened again after reopenMin, doubling
// to reopenMax; /healthz fails once it has been down for kernelDownLimit.
const (
	reopenMin       = time.Second
	reopenMax       = 30 * time.Second
	kernelDownLimit = time.Minute
)

// follow reads records as they are logged until ctx ends. A failed read
// closes the log and opens it again with backoff, reading what was logged
// since the last good read that the ring still holds.
func (k *kernelWatch) follow(ctx context.Context) {
	for {
		err := k.kmsg.Follow(ctx, 500*time.Millisecond, k.monitor.Handle, k.tick)
		if err == nil || ctx.Err() != nil {
			return
		}
		k.markDown(err)
		if !k.reopen(ctx) {
			return
		}
	}
}

func (k *kernelWatch) markDown(err error) {
	klog.ErrorS(err, "Reading the kernel log failed; opening it again with backoff", "retryIn", reopenMin)
	_ = k.kmsg.Close()
	k.mu.Lock()
	k.downSince = k.clk.Now()
	k.mu.Unlock()
}

// reopen opens the log again, backing off, until it works (true) or ctx
// ends (false).
func (k *kernelWatch) reopen(ctx context.Context) bool {
	for delay := reopenMin; ; delay = min(2*delay, reopenMax) {
		t := k.clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
		src, err := k.openSince()
		if err == nil {
			k.markUp(src)
			return true
		}
		klog.V(2).InfoS("Kernel log still unreadable", "err", err, "retryIn", min(2*delay, reopenMax))
	}
}

// openSince opens the log with a lookback reaching back to the last good
// read, and reads what it holds from then.
func (k *kernelWatch) openSince() (kernellog.Source, error) {
	src, err := k.open(min(k.lookback, k.clk.Since(k.lastRead)))
	if err != nil {
		return nil, err
	}
	if err := src.ReadAvailable(k.monitor.Handle); err != nil {
		_ = src.Close()
		return nil, err
	}
	return src, nil
}

func (k *kernelWatch) markUp(src kernellog.Source) {
	k.mu.Lock()
	down := k.clk.Since(k.downSince)
	k.kmsg, k.last, k.downSince = src, kernellog.KmsgStats{}, time.Time{}
	k.mu.Unlock()
	klog.InfoS("Reading the kernel log works again", "downFor", down.Round(time.Second))
}

// check fails while the kernel log has been unreadable for longer than
// kernelDownLimit.
func (k *kernelWatch) check() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.downSince.IsZero() {
		return nil
	}
	if down := k.clk.Since(k.downSince); down > kernelDownLimit {
		return fmt.Errorf("kernel log unreadable for %v (limit %v)", down.Round(time.Second), kernelDownLimit)
	}
	return nil
}

// addCheck makes /healthz fail too when check does.
func (l *liveness) addCheck(check func() error) {
	l.mu.Lock()
	l.checks = append(l.checks, check)
	l.mu.Unlock()
}
