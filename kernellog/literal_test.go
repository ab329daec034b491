package kernellog

import (
	"math/rand"
	"reflect"
	"regexp/syntax"
	"sort"
	"strings"
	"testing"
)

func TestRequiredLiterals(t *testing.T) {
	cases := map[string][]string{
		`task docker:\w+ blocked for more than \w+ seconds\.`: {" blocked for more than "},
		`EXT4-fs error .*`: {"EXT4-fs error "},
		`(Buffer I/O error on dev \S+|I/O error, dev \S+, sector \d+).*`: {"Buffer I/O error on dev ", "I/O error, dev "},
		`.*\[Hardware Error\]: event severity: fatal$`:                   {"[Hardware Error]: event severity: fatal"},
		`(?i)oops`:   nil,
		`a*`:         nil,
		`(x|y*)abc?`: {"ab"},
	}
	for pattern, want := range cases {
		got := requiredLiterals(pattern)
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("requiredLiterals(%q) = %q, want %q", pattern, got, want)
		}
	}
}

func TestCanMatchNewline(t *testing.T) {
	for pattern, want := range map[string]bool{
		`task \S+ blocked`:      false,
		`[\S ]+ x`:              false,
		`a\s+b`:                 true,
		`first\nsecond`:         true,
		`(?s)a.b`:               true,
		`Killed process \d+ .*`: false,
	} {
		if got := canMatchNewline(pattern); got != want {
			t.Errorf("canMatchNewline(%q) = %v, want %v", pattern, got, want)
		}
	}
}

// TestAutomatonAgreesWithContains checks the DFA against strings.Contains
// on random text over a small alphabet, where overlaps are common.
func TestAutomatonAgreesWithContains(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rng.Intn(3)]
		}
		return string(b)
	}
	for round := 0; round < 200; round++ {
		lits := []string{word(1 + rng.Intn(4)), word(1 + rng.Intn(4)), word(2 + rng.Intn(5)), "ab", "bab"}
		a := newAutomaton(lits)
		text := word(rng.Intn(40))
		found := make([]bool, len(lits))
		a.scan(text, func(id int32) { found[id] = true })
		for i, lit := range lits {
			if found[i] != strings.Contains(text, lit) {
				t.Fatalf("text %q literal %q: automaton %v, Contains %v", text, lit, found[i], !found[i])
			}
		}
	}
}

func TestWithoutTrailingAny(t *testing.T) {
	for pattern, want := range map[string]string{
		`EXT4-fs error .*`:                   `EXT4-fs error `,
		`Killed process \d+ \(.+?\) x:\d+.*`: `Killed process \d+ \(.+?\) x:\d+`,
	} {
		got, ok := withoutTrailingAny(pattern)
		if !ok || !regexpEquivalentOnLine(got, want) {
			t.Errorf("withoutTrailingAny(%q) = %q, %v; want %q", pattern, got, ok, want)
		}
	}
	for _, pattern := range []string{`abc`, `.*`, `(?s)abc.*`} {
		if got, ok := withoutTrailingAny(pattern); ok {
			t.Errorf("withoutTrailingAny(%q) = %q, want no rewrite", pattern, got)
		}
	}
}

// regexpEquivalentOnLine compares two patterns by their canonical form.
func regexpEquivalentOnLine(a, b string) bool {
	pa, errA := syntax.Parse(a, syntax.Perl)
	pb, errB := syntax.Parse(b, syntax.Perl)
	return errA == nil && errB == nil && pa.Simplify().String() == pb.Simplify().String()
}
