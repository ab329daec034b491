// Command layout writes the README's layout table: one row per Go package
// of the module, its path and the first sentence of its doc comment.
//
//	go run ./hack/layout      # prints the table
//	go run ./hack/layout -w   # writes it into README.md, between its markers
//
// Its test fails while README.md holds another table, so a package added,
// moved or removed, or a doc comment changed, shows there first.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	write := flag.Bool("w", false, "write the table into README.md between its markers")
	root := flag.String("root", ".", "the module's root")
	flag.Parse()
	table, err := Table(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
	if !*write {
		fmt.Print(table)
		return
	}
	path := filepath.Join(*root, "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
	out, err := Replace(string(readme), table)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
}
