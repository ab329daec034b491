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
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
}

// run prints the table, or writes it into README.md with -w.
func run() error {
	write := flag.Bool("w", false, "write the table into README.md between its markers")
	root := flag.String("root", ".", "the module's root")
	flag.Parse()
	table, err := Table(*root)
	if err != nil {
		return err
	}
	if !*write {
		fmt.Print(table)
		return nil
	}
	path := filepath.Join(*root, "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the README: %w", err)
	}
	out, err := Replace(string(readme), table)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write the README: %w", err)
	}
	return nil
}
