package checksites

import (
	"fmt"
	"slices"
	"testing"
)

func TestCallsExpandsLiteralTables(t *testing.T) {
	sites, err := Calls("testdata/validate.go.txt", "check", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sites {
		got = append(got, fmt.Sprintf("%s: %s", s.Path, s.Problem))
	}
	want := []string{"a: must not be negative", "b.x: must be positive", "b.y: must be positive",
		"limits.first: must be at most *", "limits.second: must be at most *", "list[*].name: *"}
	if !slices.Equal(got, want) {
		t.Errorf("sites:\n%q\nwant\n%q", got, want)
	}
}

func TestSiteMatchesByPattern(t *testing.T) {
	s := Site{Path: "list[*].name", Problem: "must be at most *"}
	for _, c := range []struct {
		path, problem string
		want          bool
	}{
		{"list[3].name", "must be at most 9", true},
		{"list[3].other", "must be at most 9", false},
		{"listx3].name", "must be at most 9", false},
		{"list[3].name", "must be positive", false},
	} {
		if got := s.Matches(c.path, c.problem); got != c.want {
			t.Errorf("%v matches %s, %s: %v", s, c.path, c.problem, got)
		}
	}
}
