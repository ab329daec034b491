package kernellog

import (
	"regexp/syntax"
	"strings"
)

// requiredLiterals returns literals one of which appears in every string the
// pattern matches, or nil when no such set is known (then the rule is always
// a candidate). Case-insensitive literals are not used.
func requiredLiterals(pattern string) []string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	set := required(re.Simplify())
	for _, s := range set {
		if s == "" {
			return nil
		}
	}
	return set
}

func required(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{longestLinePiece(string(re.Rune))}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		return bestOf(re.Sub)
	case syntax.OpAlternate:
		var union []string
		for _, sub := range re.Sub {
			s := required(sub)
			if s == nil {
				return nil
			}
			union = append(union, s...)
		}
		return union
	}
	return nil
}

// bestOf picks, among the parts of a concatenation, the literal set whose
// shortest literal is longest: the most selective filter.
func bestOf(subs []*syntax.Regexp) []string {
	var best []string
	bestLen := 0
	for _, sub := range subs {
		s := required(sub)
		if s == nil {
			continue
		}
		if l := shortest(s); l > bestLen {
			best, bestLen = s, l
		}
	}
	return best
}

func shortest(set []string) int {
	m := -1
	for _, s := range set {
		if m < 0 || len(s) < m {
			m = len(s)
		}
	}
	return m
}

// canMatchNewline reports whether the pattern can match a '\n', that is
// whether it can span lines of the buffer.
func canMatchNewline(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return true
	}
	return newlineIn(re)
}

func newlineIn(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return true
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return true
			}
		}
	case syntax.OpAnyChar:
		return true
	}
	for _, sub := range re.Sub {
		if newlineIn(sub) {
			return true
		}
	}
	return false
}

// longestLinePiece keeps the longest newline-free piece of a literal: lines
// are scanned one at a time, so a literal spanning lines is never seen whole.
func longestLinePiece(lit string) string {
	best := ""
	for _, piece := range strings.Split(lit, "\n") {
		if len(piece) > len(best) {
			best = piece
		}
	}
	return best
}

// withoutTrailingAny returns the pattern without a trailing `.*` (any
// characters but newline), if it has one and something before it.
func withoutTrailingAny(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) < 2 {
		return "", false
	}
	last := re.Sub[len(re.Sub)-1]
	if last.Op != syntax.OpStar || last.Sub[0].Op != syntax.OpAnyCharNotNL {
		return "", false
	}
	head := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: re.Sub[:len(re.Sub)-1]}
	return head.String(), true
}
