package kernellog

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ReplayEpoch is the boot time given to replayed records, so their times
// are stable: a record logged N seconds after boot has Time ReplayEpoch+N.
var ReplayEpoch = time.Unix(0, 0).UTC()

// Replay reads a saved log and hands each line to fn as a Record. A line may
// be a kmsg record ("6,1234,5678901,-;message", as `cat /dev/kmsg` prints),
// a dmesg line ("[ 5678.901234] message") or a plain message. It returns
// the number of lines read. A kmsg record, or a line with a "<prio>"
// prefix (as syslog(2) reads it), keeps its facility; a dmesg line or a
// plain message has none and is taken as the kernel's (facility kern):
// the file is a kernel log. Save it with `cat /dev/kmsg` to keep what
// userspace wrote apart (`dmesg -r` is no help: util-linux prints
// facility|level unshifted, so user's level 2, priority 10, comes out
// "<3>").
func Replay(r io.Reader, fn func(Record)) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n, prevKmsg := 0, false
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 || (prevKmsg && line[0] == ' ') { // a kmsg record's dictionary line
			continue
		}
		prevKmsg = looksLikeKmsg(line)
		fn(replayRecord(line, n))
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("line %d: %w", n+1, err)
	}
	return n, nil
}

func replayRecord(line []byte, n int) Record {
	if looksLikeKmsg(line) {
		if r, err := ParseRecord(line); err == nil {
			r.Time = ReplayEpoch.Add(r.Monotonic)
			return r
		}
	}
	r := Record{Seq: uint64(n), Priority: 6, Time: ReplayEpoch}
	s := cutPriority(string(line), &r)
	if mono, msg, ok := cutDmesgStamp(s); ok {
		r.Monotonic, r.Time, r.Message = mono, ReplayEpoch.Add(mono), msg
		return r
	}
	r.Message = s
	return r
}

// cutPriority strips a leading "<prio>", as the kernel does from a line
// written to /dev/kmsg and as syslog(2) lines carry it, into r.
func cutPriority(s string, r *Record) string {
	if !strings.HasPrefix(s, "<") {
		return s
	}
	digits, rest, ok := strings.Cut(s[1:], ">")
	if !ok || len(digits) == 0 || len(digits) > 4 {
		return s
	}
	prio, err := strconv.ParseUint(digits, 10, 16)
	if err != nil {
		return s
	}
	r.Priority, r.Facility = int(prio&7), int(prio>>3)
	return rest
}

// looksLikeKmsg reports whether line starts "<digits>,<digits>,".
func looksLikeKmsg(line []byte) bool {
	commas := 0
	for _, c := range line {
		switch {
		case c == ',':
			commas++
			if commas == 2 {
				return true
			}
		case c < '0' || c > '9':
			return false
		}
	}
	return false
}

// cutDmesgStamp splits "[ 5678.901234] message".
func cutDmesgStamp(s string) (time.Duration, string, bool) {
	if !strings.HasPrefix(s, "[") {
		return 0, "", false
	}
	stamp, msg, ok := strings.Cut(s[1:], "]")
	if !ok {
		return 0, "", false
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(stamp), 64)
	if err != nil || secs < 0 {
		return 0, "", false
	}
	return time.Duration(secs * float64(time.Second)), strings.TrimPrefix(msg, " "), true
}
