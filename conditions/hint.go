package conditions

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hangwatch/hangwatch/observations"
)

var undefinedField = regexp.MustCompile(`undefined field '([^']+)'`)

// withFieldHint adds to a compile error about a field no input has the
// nearest field that exists, so `cri.containres` says "did you mean
// containers".
func withFieldHint(err error) error {
	m := undefinedField.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	best, bestDist := "", 3 // further than 2 edits is no hint
	for _, f := range observations.Fields() {
		name := f.Path[strings.LastIndex(f.Path, ".")+1:]
		if d := editDistance(m[1], name); d < bestDist {
			best, bestDist = f.Input+"."+f.Path, d
		}
	}
	if best == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean %s?)", err, best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
