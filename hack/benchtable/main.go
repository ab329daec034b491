// Command benchtable renders a section of BENCHMARKS.md from the
// measurements tests recorded (package test/measurements: JSON lines in
// the file $HANGWATCH_MEASUREMENTS names). It prints the section, its
// begin and end markers included, and fails, naming them, when a
// measurement the section names was not recorded.
//
//	go run ./hack/benchtable -measurements FILE [-measurements FILE...] -section NAME [-var KEY=VALUE...]
//	go run ./hack/benchtable -measurements FILE -summary
//
// -var gives what is not a measurement: the machine, the command, the
// date. -summary lists every measurement: the median, how many and their
// range. The sections are the templates in sections/; docs/testing.md
// says which hack script renders which.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hangwatch/hangwatch/test/measurements"
)

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	var files, vars listFlag
	fs.Var(&files, "measurements", "a JSON-lines file of measurements (repeatable)")
	fs.Var(&vars, "var", "KEY=VALUE for the section's text (repeatable)")
	section := fs.String("section", "", "the section to render: "+strings.Join(sectionNames(), ", "))
	summary := fs.Bool("summary", false, "list every measurement instead: median, count, range")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(files) == 0 || (*section == "") == !*summary {
		return errors.New("want -measurements FILE and one of -section NAME or -summary")
	}
	var all []measurements.Measurement
	for _, f := range files {
		ms, err := measurements.ReadFile(f)
		if err != nil {
			return err
		}
		all = append(all, ms...)
	}
	if *summary {
		return writeSummary(out, all)
	}
	values, err := parseVars(vars)
	if err != nil {
		return err
	}
	text, err := render(*section, newFigures(all, values))
	if err != nil {
		return fmt.Errorf("section %s from %s: %w", *section, strings.Join(files, ", "), err)
	}
	_, err = io.WriteString(out, text)
	return err
}

func parseVars(vars []string) (map[string]string, error) {
	values := map[string]string{}
	for _, v := range vars {
		key, value, ok := strings.Cut(v, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("-var %q: want KEY=VALUE", v)
		}
		values[key] = value
	}
	return values, nil
}
