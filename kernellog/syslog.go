package kernellog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
)

// syslog(2) actions (linux/include/linux/syslog.h).
const (
	syslogActionReadAll    = 3
	syslogActionSizeBuffer = 10
)

// Syslog reads the kernel's ring buffer with syslog(2) (SYSLOG_ACTION_READ_ALL,
// what dmesg reads without /dev/kmsg). It needs CAP_SYSLOG (or
// kernel.dmesg_restrict=0) but no device: a container that may not open
// /dev/kmsg (the device cgroup of a non-privileged container) can still
// read it. The buffer has no sequence numbers, so Syslog polls it and hands
// on the lines stamped after the last one it handed on. It is not safe for
// concurrent use.
type Syslog struct {
	read     func([]byte) (int, error)
	clock    clock.PassiveClock
	boot     time.Time
	notAfter time.Time
	buf      []byte
	last     time.Duration // stamp of the newest line handed on
	atLast   int           // lines with that stamp handed on
	started  bool
	seq      uint64
	stats    KmsgStats
}

// OpenSyslog checks that syslog(2) may be read and sizes the buffer; records
// logged before now minus lookback are skipped.
func OpenSyslog(lookback time.Duration, clk clock.PassiveClock) (*Syslog, error) {
	size, err := unix.Klogctl(syslogActionSizeBuffer, nil)
	if err != nil {
		return nil, fmt.Errorf("syslog(2) SIZE_BUFFER: %w", err)
	}
	read := func(b []byte) (int, error) { return unix.Klogctl(syslogActionReadAll, b) }
	return newSyslog(read, size, lookback, clk)
}

func newSyslog(read func([]byte) (int, error), size int, lookback time.Duration, clk clock.PassiveClock) (*Syslog, error) {
	boot, err := BootTime(clk)
	if err != nil {
		return nil, err
	}
	k := &Syslog{read: read, clock: clk, boot: boot, notAfter: clk.Now().Add(-lookback), buf: make([]byte, size)}
	if _, err := k.read(k.buf); err != nil {
		return nil, fmt.Errorf("syslog(2) READ_ALL: %w", err)
	}
	return k, nil
}

// Close releases nothing; it is there to match Kmsg.
func (k *Syslog) Close() error { return nil }

// Stats returns the counts so far.
func (k *Syslog) Stats() KmsgStats { return k.stats }

// ReadAvailable hands on every line logged since the last call.
func (k *Syslog) ReadAvailable(fn func(Record)) error {
	n, err := k.read(k.buf)
	if err != nil {
		return fmt.Errorf("syslog(2) READ_ALL: %w", err)
	}
	lines := k.newLines(k.buf[:n])
	for _, line := range lines {
		k.handle(line, fn)
	}
	return nil
}

// newLines returns the lines after the last one handed on, oldest first,
// scanning back from the newest. A buffer whose oldest line is already
// newer than the last one handed on has lost lines in between.
func (k *Syslog) newLines(b []byte) [][]byte {
	var out [][]byte
	rest := bytes.TrimRight(b, "\n")
	for len(rest) > 0 {
		i := bytes.LastIndexByte(rest, '\n')
		line := rest[i+1:]
		rest = rest[:max(i, 0)]
		ts, ok := syslogStamp(line)
		if k.started && ok && ts < k.last {
			break
		}
		out = append(out, line)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if k.started && len(rest) == 0 && len(out) > 0 {
		if ts, ok := syslogStamp(out[0]); ok && ts > k.last {
			k.stats.Lost++ // at least one line was overwritten unseen
		}
	}
	return k.skipSeen(out)
}

// skipSeen drops the lines stamped like the last one handed on that were
// already handed on, and remembers the new last stamp.
func (k *Syslog) skipSeen(lines [][]byte) [][]byte {
	var out [][]byte
	seenAtLast := 0
	for _, line := range lines {
		ts, _ := syslogStamp(line)
		if k.started && ts == k.last && seenAtLast < k.atLast {
			seenAtLast++
			continue
		}
		out = append(out, line)
	}
	for _, line := range out {
		ts, _ := syslogStamp(line)
		if !k.started || ts > k.last {
			k.last, k.atLast, k.started = ts, 0, true
		}
		if ts == k.last {
			k.atLast++
		}
	}
	k.started = true
	return out
}

func (k *Syslog) handle(line []byte, fn func(Record)) {
	r, err := parseSyslogLine(line)
	if err != nil {
		k.stats.ParseErrors++
		return
	}
	k.seq++
	r.Seq = k.seq
	k.stats.admit(r, k.boot, k.notAfter, true, fn)
}

// Follow polls every interval until ctx ends, calling idle after each poll.
func (k *Syslog) Follow(ctx context.Context, interval time.Duration, fn func(Record), idle func()) error {
	ticking, ok := k.clock.(clock.WithTicker)
	if !ok {
		ticking = clock.RealClock{}
	}
	tick := ticking.NewTicker(interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		if err := k.ReadAvailable(fn); err != nil {
			return err
		}
		idle()
		select {
		case <-ctx.Done():
		case <-tick.C():
		}
	}
	return nil
}

// syslogStamp is the "[seconds.micros]" stamp after the "<prio>" prefix.
func syslogStamp(line []byte) (time.Duration, bool) {
	open := bytes.IndexByte(line, '[')
	end := bytes.IndexByte(line, ']')
	if open < 0 || end < open || open > 8 {
		return 0, false
	}
	secs, micros, ok := bytes.Cut(bytes.TrimSpace(line[open+1:end]), []byte{'.'})
	if !ok {
		return 0, false
	}
	// An uptime of at most 2^32 s (136 years) and a six-digit fraction fit
	// a Duration; anything else is not a kernel's stamp.
	s, err1 := strconv.ParseUint(string(secs), 10, 32)
	us, err2 := strconv.ParseUint(string(micros), 10, 32)
	if err1 != nil || err2 != nil || us >= 1e6 {
		return 0, false
	}
	return time.Duration(s)*time.Second + time.Duration(us)*time.Microsecond, true
}

// parseSyslogLine parses "<prio>[seconds.micros] message".
func parseSyslogLine(line []byte) (Record, error) {
	var r Record
	if len(line) < 3 || line[0] != '<' {
		return r, fmt.Errorf("syslog line %q: no <priority>", clip(line))
	}
	end := bytes.IndexByte(line, '>')
	if end < 0 {
		return r, fmt.Errorf("syslog line %q: no <priority>", clip(line))
	}
	prio, err := strconv.ParseUint(string(line[1:end]), 10, 16)
	if err != nil {
		return r, fmt.Errorf("syslog line %q: priority %q: not a number", clip(line), line[1:end])
	}
	r.Priority, r.Facility = int(prio&7), int(prio>>3)
	ts, ok := syslogStamp(line)
	if !ok {
		return r, fmt.Errorf("syslog line %q: no [seconds.micros] stamp (printk.time off?)", clip(line))
	}
	r.Monotonic = ts
	msg := line[bytes.IndexByte(line, ']')+1:]
	r.Message = string(bytes.TrimPrefix(msg, []byte{' '}))
	return r, nil
}

// Source is where kernel records come from: /dev/kmsg, or syslog(2) where
// the device may not be opened.
type Source interface {
	ReadAvailable(fn func(Record)) error
	Follow(ctx context.Context, interval time.Duration, fn func(Record), idle func()) error
	Stats() KmsgStats
	Close() error
}

// OpenSource opens path (/dev/kmsg) and, when the device may not be opened
// (EPERM from a non-privileged container's device cgroup, or EACCES),
// falls back to syslog(2). It says which it opened.
func OpenSource(path string, lookback time.Duration, clk clock.PassiveClock) (Source, string, error) {
	k, err := OpenKmsg(path, lookback, clk)
	if err == nil {
		return k, path, nil
	}
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) {
		return nil, "", err
	}
	kl, klErr := OpenSyslog(lookback, clk)
	if klErr != nil {
		return nil, "", fmt.Errorf("%w; and the fallback: %w", err, klErr)
	}
	return kl, "syslog(2)", nil
}
