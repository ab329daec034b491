package kubeletmetrics

import "bytes"

// readFamilyPrefixes name the metric families a Snapshot is built from, in
// every kubelet generation this package knows.
var readFamilyPrefixes = [][]byte{
	[]byte("kubelet_pleg_"),
	[]byte("kubelet_evented_pleg_"),
	[]byte("kubelet_runtime_operations"),
}

// keepReadFamilies returns a copy of body in which every line that belongs
// to a family a Snapshot does not read is blank. A kubelet serves some
// thousand series (more with every pod); the families read here are a few
// dozen lines, and the text parser's cost is per line. Lines are blanked,
// not removed, so the parser's errors still name the body's line numbers.
func keepReadFamilies(body []byte) []byte {
	out := make([]byte, 0, 16<<10) // the read lines, and a newline per line
	forEachLine(body, func(_ int, line []byte) bool {
		if isReadFamily(familyOf(line)) {
			out = append(out, line...)
		}
		out = append(out, '\n')
		return true
	})
	return out
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

func isReadFamily(name []byte) bool {
	for _, p := range readFamilyPrefixes {
		if bytes.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
