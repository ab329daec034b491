package kernellog

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// Record is one kernel log record.
type Record struct {
	Priority int // syslog level, 0 (emerg) to 7 (debug)
	// Facility is the syslog facility: 0 (kern) for the kernel's own
	// records; a write to /dev/kmsg is 1 (user) or another, never 0
	// (facility.go). A line read from a file without one counts as 0.
	Facility int
	Seq      uint64
	// Monotonic is the time since boot at which the kernel logged it.
	Monotonic time.Duration
	// Continuation is true for a record flagged as continuing the previous one.
	Continuation bool
	Message      string
	// Dict holds the KEY=value lines that follow the message, if any.
	Dict map[string]string
	// Time is the wall time, from the boot time plus Monotonic.
	Time time.Time
}

// ParseRecord parses one /dev/kmsg record:
//
//	"<prio>,<seq>,<usec>,<flag>[,...];<message>\n[ KEY=value\n]..."
//
// Errors name the field and the value that is wrong.
func ParseRecord(b []byte) (Record, error) {
	var r Record
	semi := bytes.IndexByte(b, ';')
	if semi < 0 {
		return r, fmt.Errorf("kmsg record %q: no ';' after the header", clip(b))
	}
	head, body := b[:semi], b[semi+1:]
	fields := bytes.SplitN(head, []byte{','}, 5)
	if len(fields) < 4 {
		return r, fmt.Errorf("kmsg record header %q: want prio,seq,usec,flag", clip(head))
	}
	prio, err := strconv.ParseUint(string(fields[0]), 10, 16)
	if err != nil {
		return r, fmt.Errorf("kmsg record header %q: priority %q: not a number", clip(head), fields[0])
	}
	r.Priority, r.Facility = int(prio&7), int(prio>>3)
	if r.Seq, err = strconv.ParseUint(string(fields[1]), 10, 64); err != nil {
		return r, fmt.Errorf("kmsg record header %q: sequence %q: not a number", clip(head), fields[1])
	}
	usec, err := strconv.ParseUint(string(fields[2]), 10, 63)
	if err != nil {
		return r, fmt.Errorf("kmsg record header %q: timestamp %q: not a number", clip(head), fields[2])
	}
	r.Monotonic = time.Duration(usec) * time.Microsecond
	r.Continuation = len(fields[3]) > 0 && (fields[3][0] == 'c' || fields[3][0] == '+')
	msg, dict, _ := bytes.Cut(body, []byte{'\n'})
	r.Message = unescape(msg)
	r.Dict = parseDict(dict)
	return r, nil
}

// parseDict reads the " KEY=value" lines after the message.
func parseDict(b []byte) map[string]string {
	var d map[string]string
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		k, v, ok := bytes.Cut(bytes.TrimPrefix(line, []byte{' '}), []byte{'='})
		if !ok || len(k) == 0 {
			continue
		}
		if d == nil {
			d = map[string]string{}
		}
		d[string(k)] = unescape(v)
	}
	return d
}

// unescape undoes kmsg's \xNN escaping of unprintable bytes.
func unescape(b []byte) string {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+3 < len(b) && b[i+1] == 'x' {
			if v, err := strconv.ParseUint(string(b[i+2:i+4]), 16, 8); err == nil {
				out = append(out, byte(v))
				i += 3
				continue
			}
		}
		out = append(out, b[i])
	}
	return string(out)
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
