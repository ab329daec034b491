package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// maxLine bounds one JSON line; go test's lines are far shorter.
const maxLine = 4 << 20

// maxBuffered bounds the output kept for one running test.
const maxBuffered = 1 << 20

type testKey struct{ pkg, test string }

// skipped is a skipped top-level test and why.
type skipped struct {
	name, reason string
}

type summary struct {
	running        map[testKey]*strings.Builder
	passed, failed int
	skips          []skipped
	failedPkgs     []string
	badLines       int
	// why holds, for each failed test, its last messages (whyFailed).
	why []failure
}

// failure is a failed test and its last messages.
type failure struct {
	name     string
	messages []string
}

func newSummary() *summary {
	return &summary{running: map[testKey]*strings.Builder{}}
}

// read consumes the event stream and writes the lines a person should see
// as they come: package results, build errors, failed tests' output.
func (s *summary) read(r *bufio.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// Not an event (go vet's or the linker's own text): show it.
			s.badLines++
			fmt.Fprintln(w, sc.Text())
			continue
		}
		s.handle(e, w)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read go test -json: %w", err)
	}
	return nil
}

func (s *summary) handle(e event, w io.Writer) {
	if e.Action == "build-output" {
		fmt.Fprint(w, e.Output)
		return
	}
	if e.Test == "" {
		s.handlePackage(e, w)
		return
	}
	key := testKey{e.Package, e.Test}
	switch e.Action {
	case "run":
		s.running[key] = &strings.Builder{}
	case "output":
		if b := s.running[key]; b != nil && b.Len() < maxBuffered {
			b.WriteString(e.Output)
		}
	case "pass", "fail", "skip":
		s.end(key, e.Action, w)
	}
}

// end records a finished test; only top-level tests are counted.
func (s *summary) end(key testKey, action string, w io.Writer) {
	out := ""
	if b := s.running[key]; b != nil {
		out = b.String()
	}
	delete(s.running, key)
	if action == "fail" {
		fmt.Fprint(w, out)
		s.why = append(s.why, failure{shortPkg(key.pkg) + "." + key.test, lastMessages(out)})
	}
	if strings.Contains(key.test, "/") {
		return
	}
	switch action {
	case "pass":
		s.passed++
	case "fail":
		s.failed++
	case "skip":
		s.skips = append(s.skips, skipped{shortPkg(key.pkg) + "." + key.test, skipReason(out)})
	}
}

// handlePackage shows a package's own lines (its ok/FAIL line, output
// outside any test) and counts tests a crash left unfinished as failed.
func (s *summary) handlePackage(e event, w io.Writer) {
	switch e.Action {
	case "output":
		if e.Output != "PASS\n" && e.Output != "FAIL\n" {
			fmt.Fprint(w, e.Output)
		}
	case "fail":
		s.failedPkgs = append(s.failedPkgs, e.Package)
		s.failUnfinished(e.Package, w)
	}
}

func (s *summary) failUnfinished(pkg string, w io.Writer) {
	var keys []testKey
	for k := range s.running {
		if k.pkg == pkg {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].test < keys[j].test })
	for _, k := range keys {
		fmt.Fprintf(w, "--- FAIL: %s (did not finish)\n", k.test)
		s.end(k, "fail", w)
	}
}

// skipReason is what t.Skip said: the skipped test's output without the
// runner's own === and --- lines.
func skipReason(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		lines = append(lines, t)
	}
	if len(lines) == 0 {
		return "no reason given"
	}
	return strings.Join(lines, " ")
}

func shortPkg(pkg string) string {
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		return pkg[i+1:]
	}
	return pkg
}

func (s *summary) ok() bool { return s.failed == 0 && len(s.failedPkgs) == 0 }

// closingLine is the one line a reader (or CI) looks for.
func (s *summary) closingLine() string {
	return fmt.Sprintf("tests: %d passed, %d failed, %d skipped", s.passed, s.failed, len(s.skips))
}

func (s *summary) report(w io.Writer) {
	fmt.Fprintln(w)
	if len(s.skips) > 0 {
		fmt.Fprintf(w, "skipped (%d):\n", len(s.skips))
		for _, sk := range s.skips {
			fmt.Fprintf(w, "  %s: %s\n", sk.name, sk.reason)
		}
	}
	s.reportWhy(w)
	if len(s.failedPkgs) > 0 {
		fmt.Fprintf(w, "failed packages: %s\n", strings.Join(s.failedPkgs, " "))
	}
	fmt.Fprintln(w, s.closingLine())
}

// The last messages of each failed test are repeated at the end, where a
// reader of the output's tail (CI shows one) finds them: a test's own
// dump of logs at its failure runs to thousands of lines after its
// t.Fatal.
const (
	whyTests    = 10  // failed tests shown
	whyMessages = 4   // messages shown per test, its last
	whyWidth    = 300 // characters shown per message
)

// lastMessages are the first lines of the last whyMessages messages a
// test logged ("    x_test.go:12: want 1, got 2"), each cut to whyWidth.
func lastMessages(out string) []string {
	var msgs []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if file, rest, ok := strings.Cut(t, ": "); ok && rest != "" && isTestFileLine(file) {
			if len(t) > whyWidth {
				t = t[:whyWidth] + "…"
			}
			msgs = append(msgs, t)
		}
	}
	return msgs[max(0, len(msgs)-whyMessages):]
}

// isTestFileLine says whether s is "<name>_test.go:<line>".
func isTestFileLine(s string) bool {
	file, line, ok := strings.Cut(s, ".go:")
	if !ok || !strings.HasSuffix(file, "_test") || line == "" {
		return false
	}
	return strings.Trim(line, "0123456789") == ""
}

func (s *summary) reportWhy(w io.Writer) {
	if len(s.why) == 0 {
		return
	}
	fmt.Fprintf(w, "why they failed (each test's last messages; its whole output is above):\n")
	for i, f := range s.why {
		if i == whyTests {
			fmt.Fprintf(w, "  and %d more\n", len(s.why)-whyTests)
			break
		}
		fmt.Fprintf(w, "  %s\n", f.name)
		for _, m := range f.messages {
			fmt.Fprintf(w, "    %s\n", m)
		}
	}
}
