package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestReadmeDiagSamplesMatchTheBinary runs diag against the real
// containerd, healthy and frozen, and checks that docs/diag.md's sample
// outputs have the same sections, labels and methods as what the binary
// prints now, and that every key of diag's JSON is in docs/diag.md's key
// table. Values (times, counts, paths) may differ; the shape may not.
func TestReadmeDiagSamplesMatchTheBinary(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c := hangwatch.SharedContainerd(t)
	readme := readReadme(t)
	healthy := diagText(t, c.Endpoint, "--samples", "5")
	checkSample(t, "healthy", readmeBlockAfter(t, readme, "Healthy runtime"), healthy)
	keys := diagJSONKeys(t, c.Endpoint)
	thaw := harness.Freeze(t, c)
	frozen := diagText(t, c.Endpoint)
	keys = append(keys, diagJSONKeys(t, c.Endpoint)...)
	thaw()
	checkSample(t, "frozen", readmeBlockAfter(t, readme, "frozen with `kill -STOP`"), frozen)
	table := readmeSection(t, readme, "## JSON output", "\n## ")
	for _, k := range keys {
		if !documented(table, k) {
			t.Errorf("diag -o json key %s is not in docs/diag.md's JSON key table", k)
		}
	}
}

func readReadme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.ModuleRoot(), "docs", "diag.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeBlockAfter is the first fenced block after the line holding marker.
func readmeBlockAfter(t *testing.T, readme, marker string) string {
	t.Helper()
	i := strings.Index(readme, marker)
	if i < 0 {
		t.Fatalf("docs/diag.md has no %q", marker)
	}
	rest := readme[i:]
	_, block, ok := strings.Cut(rest, "```\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatalf("docs/diag.md has no fenced block after %q", marker)
	}
	return block
}

func readmeSection(t *testing.T, readme, from, to string) string {
	t.Helper()
	i := strings.Index(readme, from)
	if i < 0 {
		t.Fatalf("docs/diag.md has no %q", from)
	}
	s := readme[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		s = s[:j]
	}
	return s
}

func diagText(t *testing.T, endpoint string, extra ...string) string {
	t.Helper()
	args := append([]string{"diag", "-r", endpoint, "-t", hangwatch.ProbeTimeout.String()}, extra...)
	out, stderr, code, err := harness.Run(hangwatch.HangwatchBin, args...)
	if err != nil || (code != 0 && code != 1) {
		t.Fatalf("diag %v: exit %d, %v\n%s%s", args, code, err, out, stderr)
	}
	return out
}

// labelRe is a line's label: capitals and spaces up to a double space or a
// tab (ENDPOINT, LARGEST RESPONSE, KERNEL LOG, VERDICT) or the first
// column of a table (a method, a signal).
var labelRe = regexp.MustCompile(`^([A-Z][A-Z ]*[A-Z]|[A-Z][a-zA-Z]+|[a-z][a-zA-Z]+)(\s{2,}|\t|$)`)

// kernelMatchRow is a kernel match's row or their header: which lines the
// kernel log holds differs from machine to machine, so they are no shape.
var kernelMatchRow = regexp.MustCompile(`^(\d\d:\d\d:\d\d|TIME\s+REASON\s)`)

// shape is a diag table's labels in order, without values, with runs of
// a verdict's "  - ..." reasons reduced to one. The IN FLIGHT section is
// left out: whether a timed-out call is still out at the moment of the
// report is a race.
func shape(text string) []string {
	var out []string
	inFlight := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "IN FLIGHT"):
			inFlight = true
			continue
		case strings.TrimSpace(line) == "":
			inFlight = false
			continue
		case inFlight, strings.HasPrefix(line, "$ "), kernelMatchRow.MatchString(line):
			continue
		case strings.HasPrefix(line, "  - "):
			if len(out) == 0 || out[len(out)-1] != "- reason" {
				out = append(out, "- reason")
			}
			continue
		}
		if m := labelRe.FindStringSubmatch(line); m != nil {
			out = append(out, strings.Join(strings.Fields(m[1]), " "))
		} else {
			out = append(out, "? "+line)
		}
	}
	return out
}

func checkSample(t *testing.T, name, sample, actual string) {
	t.Helper()
	want, got := shape(actual), shape(sample)
	if strings.Join(want, "|") != strings.Join(got, "|") {
		t.Errorf("docs/diag.md's %s diag sample is stale.\ndocs/diag.md's labels: %q\nthe binary's:    %q\nthe binary prints:\n%s",
			name, got, want, actual)
	}
}

// diagJSONKeys runs diag -o json and returns its keys as docs/diag.md's
// table names them: dotted paths, lists as name[].
func diagJSONKeys(t *testing.T, endpoint string) []string {
	t.Helper()
	out := diagText(t, endpoint, "-o", "json")
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("diag -o json: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	walkKeys("", v, seen)
	var keys []string
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) < 20 {
		t.Fatalf("diag -o json has only keys %v", keys)
	}
	return keys
}

// walkKeys records the paths of values that are not objects (scalars,
// null, lists of scalars); objects and lists of objects are walked.
func walkKeys(prefix string, v any, seen map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			walkKeys(joinKey(prefix, k), child, seen)
		}
	case []any:
		if len(x) == 0 || !isObject(x[0]) {
			seen[prefix+"[]"] = true
			return
		}
		for _, child := range x {
			walkKeys(prefix+"[]", child, seen)
		}
	default:
		seen[prefix] = true
	}
}

func isObject(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// documented: the table names k, or k in shorthand by its last part; an
// empty or null list counts when the table names its elements' keys.
func documented(table, k string) bool {
	if strings.Contains(table, "`"+k+"`") || strings.Contains(table, "`"+lastPart(k)+"`") {
		return true
	}
	base := strings.TrimSuffix(k, "[]")
	return strings.Contains(table, "`"+base+"[]") || strings.Contains(table, "`"+base+".")
}

// lastPart is a key's last part with its dot: the table names siblings in
// shorthand, `.limitBytes` after `largestResponse.method`.
func lastPart(k string) string {
	i := strings.LastIndex(k, ".")
	if i < 0 {
		return k
	}
	return k[i:]
}
