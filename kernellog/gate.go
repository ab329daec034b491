package kernellog

import (
	"regexp/syntax"
	"strings"
)

// minGate is the shortest gate worth a scan of its own.
const minGate = 4

// gateOf finds a literal every match of every pattern contains, at least
// minGate bytes long, or "". A rule set whose patterns share one (the GPU
// pack's "NVRM: ") skips, with one vectorised strings.Contains, the lines
// without it, instead of running its automaton over them. A pattern that
// can match a newline (a multi-line rule) rules a gate out.
func gateOf(patterns []string) string {
	runs := make([][]string, 0, len(patterns))
	for _, p := range patterns {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil || canMatchNewline(p) {
			return ""
		}
		r := requiredRuns(re.Simplify())
		if len(r) == 0 {
			return ""
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return ""
	}
	best := ""
	for _, run := range runs[0] {
		for i := 0; i < len(run); i++ {
			for j := len(run); j-i >= minGate && j-i > len(best); j-- {
				if inEvery(run[i:j], runs[1:]) {
					best = run[i:j]
					break
				}
			}
		}
	}
	return best
}

// inEvery: each entry of runs has a run containing s.
func inEvery(s string, runs [][]string) bool {
	for _, r := range runs {
		found := false
		for _, run := range r {
			if strings.Contains(run, s) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// requiredRuns are the case-sensitive literal runs every match of re
// contains.
func requiredRuns(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredRuns(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredRuns(re.Sub[0])
		}
	case syntax.OpConcat:
		var out []string
		for _, sub := range re.Sub {
			out = append(out, requiredRuns(sub)...)
		}
		return out
	}
	return nil
}
