// Command testsummary reads `go test -json` on standard input and prints
// what a person needs from it: each package's result line, the output of
// failed tests, each skipped test with its reason, and one closing line
// "tests: N passed, N failed, N skipped" counting top-level tests. It exits
// 1 when a test or a package failed. hack/test.sh pipes go test into it.
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	s := newSummary()
	if err := s.read(bufio.NewReader(os.Stdin), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	s.report(os.Stdout)
	if len(os.Args) > 1 {
		if err := os.WriteFile(os.Args[1], []byte(s.closingLine()+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
	}
	if !s.ok() {
		os.Exit(1)
	}
}
