package kernellog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
)

// KmsgStats counts what a Kmsg source has read.
type KmsgStats struct {
	Lines       uint64 // records handed on
	Lost        uint64 // records overwritten before they were read
	ParseErrors uint64
	Skipped     uint64 // older than the lookback
}

// Kmsg reads /dev/kmsg. It is not safe for concurrent use.
type Kmsg struct {
	fd       int
	clock    clock.PassiveClock
	boot     time.Time
	notAfter time.Time // records in the ring at open stamped before this are skipped (now - lookback)
	drained  bool      // the records in the ring at open have been read: what follows is new
	nextSeq  uint64
	buf      []byte
	stats    KmsgStats
}

// OpenKmsg opens path (normally /dev/kmsg) at the oldest record kept; records
// logged before now minus lookback are skipped, so a restart does not report
// a whole boot's history again.
func OpenKmsg(path string, lookback time.Duration, clk clock.PassiveClock) (*Kmsg, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	boot, err := BootTime(clk)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return &Kmsg{fd: fd, clock: clk, boot: boot, notAfter: clk.Now().Add(-lookback), buf: make([]byte, 16<<10)}, nil
}

// BootTime is the wall time of boot: now minus CLOCK_MONOTONIC, the clock
// kmsg stamps records with.
func BootTime(clk clock.PassiveClock) (time.Time, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Time{}, fmt.Errorf("read CLOCK_MONOTONIC: %w", err)
	}
	return clk.Now().Add(-time.Duration(ts.Nano())), nil
}

// Close releases the file.
func (k *Kmsg) Close() error { return unix.Close(k.fd) }

// Stats returns the counts so far.
func (k *Kmsg) Stats() KmsgStats { return k.stats }

// ReadAvailable hands every record available now to fn and returns when
// none is left. A record overwritten before it was read is counted as lost.
func (k *Kmsg) ReadAvailable(fn func(Record)) error {
	for {
		n, err := unix.Read(k.fd, k.buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			k.drained = true
			return nil
		case errors.Is(err, unix.EPIPE):
			continue // overrun: the next read returns the oldest record left; the seq gap counts the loss
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("read kmsg: %w", err)
		}
		k.handle(k.buf[:n], fn)
	}
}

func (k *Kmsg) handle(b []byte, fn func(Record)) {
	r, err := ParseRecord(b)
	if err != nil {
		k.stats.ParseErrors++
		return
	}
	if k.nextSeq != 0 && r.Seq > k.nextSeq {
		k.stats.Lost += r.Seq - k.nextSeq
	}
	k.nextSeq = r.Seq + 1
	// Only the records the ring held at open are old: a new one stamped
	// a little before the open (the kernel's printk clock can lag
	// CLOCK_MONOTONIC by tens of milliseconds) is still news.
	k.stats.admit(r, k.boot, k.notAfter, !k.drained, fn)
}

// admit stamps r with its wall-clock time (boot plus its monotonic stamp)
// and hands it to fn, counted, unless checkAge and it is older than
// notAfter (before the lookback window), which it counts as skipped.
func (st *KmsgStats) admit(r Record, boot, notAfter time.Time, checkAge bool, fn func(Record)) {
	r.Time = boot.Add(r.Monotonic)
	if checkAge && r.Time.Before(notAfter) {
		st.Skipped++
		return
	}
	st.Lines++
	fn(r)
}

// Follow hands records to fn as they are logged until ctx ends. Every
// wakeup, and at least every interval, it calls idle (for time-based work
// such as quiet windows), after the records read.
func (k *Kmsg) Follow(ctx context.Context, interval time.Duration, fn func(Record), idle func()) error {
	fds := []unix.PollFd{{Fd: int32(k.fd), Events: unix.POLLIN}}
	for ctx.Err() == nil {
		if err := k.ReadAvailable(fn); err != nil {
			return err
		}
		idle()
		if _, err := unix.Poll(fds, int(interval/time.Millisecond)); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll kmsg: %w", err)
		}
	}
	return nil
}
