package harness

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"regexp"
)

// SeriesOf reads the samples of one metric from Prometheus text, by the
// sample's name and labels as written.
func SeriesOf(text, name string) map[string]float64 {
	series := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != name && !strings.HasPrefix(f[0], name+"{")) {
			continue
		}
		series[f[0]], _ = strconv.ParseFloat(f[len(f)-1], 64)
	}
	return series
}

func SumSeries(text, name string) float64 {
	sum := 0.0
	for _, v := range SeriesOf(text, name) {
		sum += v
	}
	return sum
}

// SeriesGrowth lists how much each series of a counter grew between two
// scrapes, as "{labels} n" pairs.
func SeriesGrowth(before, after, name string) string {
	was := SeriesOf(before, name)
	var out []string
	for s, v := range SeriesOf(after, name) {
		if v != was[s] {
			out = append(out, fmt.Sprintf("%s %.0f", strings.TrimPrefix(s, name), v-was[s]))
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// MetricValue reads one sample from /metrics text, -1 when absent.
func MetricValue(text, series string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}
