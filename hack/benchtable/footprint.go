package main

import (
	"fmt"
	"strings"
)

// The footprint benchmark's setups and processes (TestFootprintBesideNPD),
// as its measurements name them: npd_bench_<setup>_<process>_<figure>.
var (
	footprintSetups    = []struct{ id, name string }{{"standalone", "standalone"}, {"kubeapiserver", "kube-apiserver"}}
	footprintProcesses = []struct{ id, name string }{{"hangwatch", "hangwatch"}, {"node_problem_detector", "node-problem-detector"}}
)

// footprintRows are the rows of the footprint table: per setup hangwatch's,
// node-problem-detector's, and their ratios.
func (f *figures) footprintRows() string {
	var b strings.Builder
	for _, setup := range footprintSetups {
		fig := func(process int, figure string) float64 {
			return f.value("npd_bench_" + setup.id + "_" + footprintProcesses[process].id + "_" + figure)
		}
		for i, p := range footprintProcesses {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f %% (%.2f s) | %.1f MiB |\n", setup.name, p.name,
				kibPair(fig(i, "vmrss_median_kib"), fig(i, "vmrss_peak_kib")),
				kibPair(fig(i, "rssanon_median_kib"), fig(i, "rssanon_peak_kib")),
				kibPair(fig(i, "rssfile_median_kib"), fig(i, "rssfile_peak_kib")),
				fig(i, "cpu_percent"), fig(i, "cpu_seconds"), fig(i, "binary_bytes")/(1<<20))
		}
		ratioPair := func(figure string) string {
			return ratio(fig(0, figure+"_median_kib"), fig(1, figure+"_median_kib")) + " / " + ratio(fig(0, figure+"_peak_kib"), fig(1, figure+"_peak_kib"))
		}
		fmt.Fprintf(&b, "| %s | hangwatch / NPD | %s | %s | %s | %s | %s |\n", setup.name,
			ratioPair("vmrss"), ratioPair("rssanon"), ratioPair("rssfile"),
			ratio(fig(0, "cpu_percent"), fig(1, "cpu_percent")), ratio(fig(0, "binary_bytes"), fig(1, "binary_bytes")))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func kibPair(median, peak float64) string {
	return fmt.Sprintf("%.1f / %.1f MiB", median/1024, peak/1024)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}
