// Command benchtable renders BENCHMARKS.md from recorded measurements:
// a header and headings (page.md.tmpl) and one section per template in
// sections/, each from its records file, records/SECTION.jsonl (JSON
// lines: a measurement or a text of the section, each with the command,
// machine and date it came from). Its test fails while BENCHMARKS.md
// differs from what the records render.
//
//	go run ./hack/benchtable -w                # BENCHMARKS.md from records/
//	go run ./hack/benchtable -measurements FILE -section NAME [-var KEY=VALUE...] [-save [-row KEY]]
//	go run ./hack/benchtable -gobench FILE [-var KEY=VALUE...]
//	go run ./hack/benchtable -measurements FILE -summary
//
// -section renders one section from the measurements tests recorded
// (package test/measurements: JSON lines in the file $HANGWATCH_MEASUREMENTS
// names) and prints it, failing, naming them, when a measurement the
// section names was not recorded; -save then writes them, with the -var
// values, as the section's records (-row: as one row of a table of rows,
// the matrix's, in place of that row's). -var gives what is not a
// measurement: the machine, the command; the date is today's unless given.
// -gobench reads `go test -bench` output and merges its results into
// records/go-bench.jsonl, one record per benchmark and unit, in place of
// the same benchmarks' earlier ones. -summary lists every measurement: the
// median, how many and their range. docs/testing.md says which hack script
// records which section.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

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
	var files, vars, gobench listFlag
	fs.Var(&files, "measurements", "a JSON-lines file of measurements (repeatable)")
	fs.Var(&vars, "var", "KEY=VALUE for the section's text (repeatable)")
	fs.Var(&gobench, "gobench", "a file of `go test -bench` output to record (repeatable; - for standard input)")
	section := fs.String("section", "", "the section to render: "+strings.Join(sectionNames(), ", "))
	summary := fs.Bool("summary", false, "list every measurement instead: median, count, range")
	save := fs.Bool("save", false, "with -section: write the section's records")
	row := fs.String("row", "", "with -save: the row (of e2e-matrix) the measurements are")
	write := fs.Bool("w", false, "write BENCHMARKS.md (-page) from the records (-records)")
	records := fs.String("records", "hack/benchtable/records", "the records folder")
	page := fs.String("page", "BENCHMARKS.md", "the page -w writes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	values, err := parseVars(vars)
	if err != nil {
		return err
	}
	if _, ok := values["date"]; !ok {
		values["date"] = time.Now().UTC().Format(time.DateOnly)
	}
	switch {
	case *write && len(files) == 0 && len(gobench) == 0 && *section == "":
		return writePage(*records, *page)
	case len(gobench) > 0 && len(files) == 0 && *section == "":
		return recordGoBench(*records, gobench, values)
	}
	if len(files) == 0 || (*section == "") == !*summary {
		return errors.New("want -w, -gobench FILE, or -measurements FILE and one of -section NAME or -summary")
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
	text, rerr := render(*section, newFigures(all, values))
	if *save && *row != "" {
		// a row is kept even when incomplete: the table says what it lacks
		if err := saveSection(*records, strings.TrimSuffix(*section, "-row"), all, values, *row, []string{"machine", "control_plane", "healthy", "date"}); err != nil {
			return err
		}
	}
	if rerr != nil {
		return fmt.Errorf("section %s from %s: %w", *section, strings.Join(files, ", "), rerr)
	}
	if *save && *row == "" {
		if err := saveSection(*records, *section, all, values, "", nil); err != nil {
			return err
		}
	}
	if *write {
		if err := writePage(*records, *page); err != nil {
			return err
		}
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
