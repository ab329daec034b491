package observations

import (
	"reflect"
	"strings"
	"testing"
)

// TestEveryFieldIsNamedAndDocumented: a field without a `cel` name or a
// `doc` would reach the rules under its Go name, undocumented.
func TestEveryFieldIsNamedAndDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Fields() {
		key := f.Input + "." + f.Path
		if strings.HasSuffix(f.Path, ".") || f.Path == "" || f.Doc == "" {
			t.Errorf("%s: every field needs a cel name and a doc tag", key)
		}
		if seen[key] {
			t.Errorf("%s named twice", key)
		}
		seen[key] = true
	}
	if len(seen) < 40 {
		t.Fatalf("only %d fields", len(seen))
	}
}

func TestEachInputNamesItself(t *testing.T) {
	var got []string
	for _, in := range []Input{CRI{}, Kernel{}, Lease{}, PLEG{}, PodStarts{}} {
		got = append(got, in.InputName())
	}
	if !reflect.DeepEqual(got, Names) {
		t.Fatalf("inputs name themselves %v, want %v", got, Names)
	}
}

func TestMarkdownTableMarksOptionalFields(t *testing.T) {
	table := MarkdownTable()
	if !strings.Contains(table, "| `pleg` | `verdict` | string |") ||
		!strings.Contains(table, "test with `has(pleg.lastSeenAgeSeconds)`") ||
		!strings.Contains(table, "| `kernel` | `<ConditionType>.active` | bool |") {
		t.Fatalf("table:\n%s", table)
	}
}
