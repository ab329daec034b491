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
// the number of lines read.
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
	s := string(line)
	if mono, msg, ok := cutDmesgStamp(s); ok {
		return Record{Seq: uint64(n), Priority: 6, Monotonic: mono, Time: ReplayEpoch.Add(mono), Message: msg}
	}
	return Record{Seq: uint64(n), Priority: 6, Time: ReplayEpoch, Message: s}
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
