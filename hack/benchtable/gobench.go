package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// goBenchSection is the records file of Go's own benchmarks.
const goBenchSection = "go-bench"

var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)
	benchPkg  = regexp.MustCompile(`^pkg: (\S+)`)
)

// parseGoBench reads `go test -bench` output: each result line becomes one
// record per value and unit ("1880000 ns/op" ...), named
// "PACKAGE.BenchmarkName UNIT" with the package's last element, in order,
// so -count 3 gives three records of each name.
func parseGoBench(r io.Reader, vars map[string]string) ([]Record, error) {
	var out []Record
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := benchPkg.FindStringSubmatch(line); m != nil {
			pkg = m[1][strings.LastIndex(m[1], "/")+1:]
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			unit := fields[i+1]
			out = append(out, Record{Name: pkg + "." + m[1] + " " + unit, Value: &v, Unit: unit,
				Command: vars["command"], Machine: vars["machine"], Date: vars["date"]})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no benchmark results in the output")
	}
	return out, nil
}

// recordGoBench merges the results of the files into records/go-bench.jsonl:
// the benchmarks run replace their earlier records, the others stay.
func recordGoBench(dir string, files []string, vars map[string]string) error {
	var fresh []Record
	for _, f := range files {
		var r io.Reader = os.Stdin
		if f != "-" {
			file, err := os.Open(f)
			if err != nil {
				return err
			}
			defer file.Close()
			r = file
		}
		rs, err := parseGoBench(r, vars)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		fresh = append(fresh, rs...)
	}
	path := filepath.Join(dir, goBenchSection+".jsonl")
	old, err := readRecords(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	replaced := map[string]bool{}
	for _, r := range fresh {
		replaced[r.Name] = true
	}
	var out []Record
	for _, r := range old {
		if !replaced[r.Name] {
			out = append(out, r)
		}
	}
	return writeRecords(path, append(out, fresh...))
}
