// Command residency says which of a running Go binary's symbols sit in
// resident pages: for each page of the binary's file mappings that
// /proc/PID/pagemap marks present, the bytes of every symbol on it. It
// prints them as `go tool nm -size` does (address, size, type, name), so
// hack/size-by-package.awk groups them by package; bytes on a resident page
// that no symbol covers are named after their ELF section.
//
//	go run ./hack/residency PID UNSTRIPPED-BINARY | awk -v bss=... -f hack/size-by-package.awk
//
// The binary must be the one running (or the same build unstripped, which
// maps the same addresses). Needs root for the page frame bits.
package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

const pageSize = 4096

type mapping struct{ start, end uint64 }

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: residency PID UNSTRIPPED-BINARY")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "residency:", err)
		os.Exit(1)
	}
}

func run(pid, bin string) error {
	maps, err := binaryMappings(pid)
	if err != nil {
		return err
	}
	pages, err := residentPages(pid, maps)
	if err != nil {
		return err
	}
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("open %s: %w", bin, err)
	}
	defer func() { _ = f.Close() }()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("symbols of %s (build it unstripped): %w", bin, err)
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].Value < syms[j].Value })
	w := bufio.NewWriter(os.Stdout)
	defer func() { _ = w.Flush() }()
	for _, pg := range pages {
		printPage(w, pg, syms, f.Sections)
	}
	return nil
}

// binaryMappings are the address ranges of the process's main executable.
func binaryMappings(pid string) ([]mapping, error) {
	exe, err := os.Readlink("/proc/" + pid + "/exe")
	if err != nil {
		return nil, fmt.Errorf("pid %s: %w", pid, err)
	}
	data, err := os.ReadFile("/proc/" + pid + "/maps")
	if err != nil {
		return nil, fmt.Errorf("pid %s maps: %w", pid, err)
	}
	var out []mapping
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("maps line %q: bad range", line)
		}
		out = append(out, mapping{start, end})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pid %s: no mapping of %s", pid, exe)
	}
	return out, nil
}

// residentPages are the start addresses of the present pages in maps.
func residentPages(pid string, maps []mapping) ([]uint64, error) {
	pm, err := os.Open("/proc/" + pid + "/pagemap")
	if err != nil {
		return nil, fmt.Errorf("pid %s pagemap: %w", pid, err)
	}
	defer func() { _ = pm.Close() }()
	var out []uint64
	for _, m := range maps {
		n := (m.end - m.start) / pageSize
		buf := make([]byte, 8*n)
		if _, err := pm.ReadAt(buf, int64(m.start/pageSize*8)); err != nil {
			return nil, fmt.Errorf("pid %s pagemap at %#x: %w", pid, m.start, err)
		}
		for i := uint64(0); i < n; i++ {
			if binary.LittleEndian.Uint64(buf[8*i:])&(1<<63) != 0 {
				out = append(out, m.start+i*pageSize)
			}
		}
	}
	return out, nil
}

// printPage prints the bytes of each symbol on the page at pg, and the
// rest under the section's name.
func printPage(w *bufio.Writer, pg uint64, syms []elf.Symbol, sections []*elf.Section) {
	end := pg + pageSize
	covered := uint64(0)
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Value+syms[i].Size > pg })
	for ; i < len(syms) && syms[i].Value < end; i++ {
		s := syms[i]
		lo, hi := max(s.Value, pg), min(s.Value+s.Size, end)
		if hi <= lo {
			continue
		}
		covered += hi - lo
		fmt.Fprintf(w, "%x %d R %s\n", lo, hi-lo, s.Name)
	}
	if covered < pageSize {
		fmt.Fprintf(w, "%x %d R section:%s\n", pg, pageSize-min(covered, pageSize), sectionOf(pg, sections))
	}
}

func sectionOf(addr uint64, sections []*elf.Section) string {
	for _, s := range sections {
		if s.Addr <= addr && addr < s.Addr+s.Size {
			return strings.TrimPrefix(s.Name, ".")
		}
	}
	return "none"
}
