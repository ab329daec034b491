package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// retiredTags are build tags the suites no longer accept: they are
// directories (test/e2e, test/bench) since the suites were split.
var retiredTags = []string{"e2e", "bench"}

// goTestCommand is a `go test` command as a page prints it: up to the end
// of its code span or line.
var goTestCommand = regexp.MustCompile("go test( [^`\\n;|]*)?")

// testFunc is a test, benchmark or fuzz target's declaration.
var testFunc = regexp.MustCompile(`(?m)^func ((Test|Benchmark|Fuzz)\w*)\(`)

// TestEveryGoTestCommandRuns: every `go test` command in the README,
// BENCHMARKS.md and docs/ (but docs/history/, which keeps what was run
// then) names packages that exist, uses no retired build tag, and its -run
// pattern matches a test of the packages it names.
func TestEveryGoTestCommandRuns(t *testing.T) {
	root := ".."
	pages := pagesUnder(t, root, "docs/*.md")
	seen := 0
	for _, page := range pages {
		for _, cmd := range goTestCommand.FindAllString(readPage(t, root, page), -1) {
			seen++
			if why := wrongCommand(root, cmd); why != "" {
				t.Errorf("%s: `%s`: %s", page, cmd, why)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("read %d go test commands in %v; the pages have more", seen, pages)
	}
}

// wrongCommand says what is wrong with cmd, or "".
func wrongCommand(root, cmd string) string {
	args := strings.Fields(cmd)[2:]
	var pkgs []string
	run := ""
	for i := 0; i < len(args); i++ {
		a := strings.Trim(args[i], `'"`)
		switch {
		case a == "-tags" && i+1 < len(args):
			i++
			for _, tag := range strings.Split(strings.Trim(args[i], `'"`), ",") {
				for _, r := range retiredTags {
					if tag == r {
						return "build tag " + tag + " is retired: the suite is the directory test/" + r
					}
				}
			}
		case a == "-run" && i+1 < len(args):
			i++
			run = strings.Trim(args[i], `'"`)
		case strings.HasPrefix(a, "-run="):
			run = strings.Trim(strings.TrimPrefix(a, "-run="), `'"`)
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, a)
		}
	}
	var tests []string
	for _, p := range pkgs {
		if strings.ContainsAny(p, "<>") || strings.Contains(p, "PACKAGE") || strings.HasSuffix(p, "...") {
			return "" // a placeholder, or every package
		}
		dir := filepath.Join(root, filepath.FromSlash(p))
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(files) == 0 {
			return "no Go package at " + p
		}
		tests = append(tests, testsIn(files)...)
	}
	return wrongRun(run, pkgs, tests)
}

// wrongRun says when a -run pattern matches none of tests.
func wrongRun(run string, pkgs, tests []string) string {
	if run == "" || len(pkgs) == 0 || run == "^$" || strings.ContainsAny(run, "<$") && !strings.HasSuffix(run, "$") {
		return ""
	}
	top, _, _ := strings.Cut(run, "/") // the subtest's part is the test's own
	re, err := regexp.Compile(top)
	if err != nil {
		return "-run " + run + ": " + err.Error()
	}
	for _, name := range tests {
		if re.MatchString(name) {
			return ""
		}
	}
	return "-run " + run + " matches no test in " + strings.Join(pkgs, " ")
}

func testsIn(files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(raw), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// TestEveryLinkedHeadingExists: a link from a page to a heading of a page
// of this repository (`page.md#heading`) finds that heading, as GitHub
// makes its anchors: a heading renamed or moved to another page fails here.
func TestEveryLinkedHeadingExists(t *testing.T) {
	root := ".."
	pages := pagesUnder(t, root, "docs/*.md", "docs/history/*.md")
	anchors := map[string]map[string]bool{}
	for _, p := range pages {
		anchors[p] = headingAnchors(t, filepath.Join(root, p))
	}
	links := 0
	for _, p := range pages {
		for _, m := range anchorLink.FindAllStringSubmatch(readPage(t, root, p), -1) {
			target := p
			if m[1] != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(p), m[1]))
			}
			heads, ok := anchors[target]
			if !ok {
				continue // not a page this test reads
			}
			links++
			if !heads[m[2]] {
				t.Errorf("%s links to %s#%s: no such heading there", p, target, m[2])
			}
		}
	}
	if links < 20 {
		t.Fatalf("read %d links to headings; the pages have more", links)
	}
}

// anchorLink is a Markdown link with a heading: its page (empty: this
// one) and the anchor.
var anchorLink = regexp.MustCompile(`\]\(([^)#\s]*\.md)?#([^)\s]+)\)`)

var codeBlock = regexp.MustCompile("(?s)```.*?```")

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation but hyphens and underscores dropped, spaces hyphens.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	text := codeBlock.ReplaceAllString(string(raw), "")
	for _, m := range regexp.MustCompile(`(?m)^#{1,6} (.*)$`).FindAllStringSubmatch(text, -1) {
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(m[1]))
		out[slug] = true
	}
	return out
}

// pagesUnder are the README, BENCHMARKS.md and the pages globs match,
// relative to root.
func pagesUnder(t *testing.T, root string, globs ...string) []string {
	t.Helper()
	pages := []string{"README.md", "BENCHMARKS.md"}
	for _, glob := range globs {
		found, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, rel)
		}
	}
	return pages
}

func readPage(t *testing.T, root, page string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
