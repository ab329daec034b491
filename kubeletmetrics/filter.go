package kubeletmetrics

import (
	"bytes"
	"fmt"
)

// readFamilyPrefixes name the metric families a Snapshot is built from, in
// every kubelet generation this package knows.
var readFamilyPrefixes = [][]byte{
	[]byte("kubelet_pleg_"),
	[]byte("kubelet_evented_pleg_"),
	[]byte("kubelet_runtime_operations"),
	[]byte(buildInfoFamily),
	[]byte(restClientFamily),
}

// Of kubernetes_feature_enabled (one line per gate, some 200) only the
// gates a Snapshot reads are kept.
var readGateLines = [][]byte{
	[]byte(`name="` + GateEventedPLEG + `"`),
	[]byte(`name="` + GateCRIListStreaming + `"`),
}

// Bounds on the lines of the families read. The kubelet's are under 300
// bytes with at most three labels; expfmt's parser is quadratic in a line's
// labels (16k labels on one line took 10 s of CPU), so these bound the
// parse's time as well as its memory.
const (
	MaxLineBytes = 4096
	MaxLabels    = 16
	MaxReadLines = 20000
)

// keepReadFamilies returns a copy of body in which every line that belongs
// to a family a Snapshot does not read is blank. A kubelet serves some
// thousand series (more with every pod); the families read here are a few
// dozen lines, and the text parser's cost is per line. Lines are blanked,
// not removed, so the parser's errors still name the body's line numbers.
// A read line over the bounds above is an error naming it.
func keepReadFamilies(body []byte) (out []byte, err error) {
	out = make([]byte, 0, 16<<10) // the read lines, and a newline per line
	read := 0
	forEachLine(body, func(n int, line []byte) bool {
		if isReadLine(line) {
			if err = checkReadLine(n, line); err == nil && read >= MaxReadLines {
				err = fmt.Errorf("line %d: over %d lines of the families read", n, MaxReadLines)
			}
			if err != nil {
				return false
			}
			read++
			out = append(out, line...)
		}
		out = append(out, '\n')
		return true
	})
	return out, err
}

// checkReadLine bounds one line of a family read: its length, and its
// labels, counted as the '=' between its braces (an upper bound, since a
// value may hold '=').
func checkReadLine(n int, line []byte) error {
	if len(line) > MaxLineBytes {
		return fmt.Errorf("line %d: %d bytes, over the %d a line of %s may have", n, len(line), MaxLineBytes, truncate(familyOf(line), 60))
	}
	open, end := bytes.IndexByte(line, '{'), bytes.LastIndexByte(line, '}')
	if open >= 0 && end > open {
		if labels := bytes.Count(line[open:end], []byte{'='}); labels > MaxLabels {
			return fmt.Errorf("line %d: %d labels, over the %d a line of %s may have", n, labels, MaxLabels, truncate(familyOf(line), 60))
		}
	}
	return nil
}

// forEachLine calls f with each line of body (without its newline) and its
// number from 1, until f returns false.
func forEachLine(body []byte, f func(n int, line []byte) bool) {
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if !f(n, line) {
			return
		}
	}
}

// familyOf is the metric name a text-format line is about: the name after
// "# HELP " or "# TYPE ", or a sample's name; nil for other comments.
func familyOf(line []byte) []byte {
	line = bytes.TrimLeft(line, " \t")
	if len(line) > 0 && line[0] == '#' {
		rest := bytes.TrimLeft(line[1:], " \t")
		if !bytes.HasPrefix(rest, []byte("HELP")) && !bytes.HasPrefix(rest, []byte("TYPE")) {
			return nil
		}
		line = bytes.TrimLeft(rest[len("HELP"):], " \t")
	}
	if i := bytes.IndexAny(line, "{ \t"); i >= 0 {
		return line[:i]
	}
	return line
}

// isReadLine says whether a line belongs to what a Snapshot reads.
func isReadLine(line []byte) bool {
	name := familyOf(line)
	if bytes.Equal(name, []byte(featureFamily)) {
		if bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("#")) {
			return true
		}
		for _, g := range readGateLines {
			if bytes.Contains(line, g) {
				return true
			}
		}
		return false
	}
	return isReadFamily(name)
}

func isReadFamily(name []byte) bool {
	for _, p := range readFamilyPrefixes {
		if bytes.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
