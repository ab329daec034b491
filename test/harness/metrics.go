package harness

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"math"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The tests' one reader of Prometheus text (/metrics of hangwatch,
// hangwatch-remedy, the kubelet, the API server): expfmt's parser, with
// every sample flattened as Prometheus writes it.

// A Sample is one line of a /metrics text: the series' name (with _bucket,
// _sum and _count for histograms and summaries), its labels and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// String is the series as Prometheus writes it: name{a="x",b="y"}, the
// labels in name order, or the name alone.
func (s Sample) String() string {
	if len(s.Labels) == 0 {
		return s.Name
	}
	var b strings.Builder
	b.WriteString(s.Name + "{")
	for i, k := range slices.Sorted(maps.Keys(s.Labels)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, s.Labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

// Scrape parses Prometheus text into its samples; those of the families
// read before a malformed line when there is one.
func Scrape(text string) []Sample {
	fams, _ := parseMetrics(text)
	var out []Sample
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		f := fams[name]
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			with := func(k, v string) map[string]string {
				c := maps.Clone(labels)
				c[k] = v
				return c
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, Sample{name, labels, m.GetCounter().GetValue()})
			case dto.MetricType_GAUGE:
				out = append(out, Sample{name, labels, m.GetGauge().GetValue()})
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					out = append(out, Sample{name, with("quantile", fmt.Sprint(q.GetQuantile())), q.GetValue()})
				}
				out = append(out, Sample{name + "_sum", labels, m.GetSummary().GetSampleSum()},
					Sample{name + "_count", labels, float64(m.GetSummary().GetSampleCount())})
			case dto.MetricType_HISTOGRAM:
				for _, b := range m.GetHistogram().GetBucket() {
					out = append(out, Sample{name + "_bucket", with("le", fmt.Sprint(b.GetUpperBound())), float64(b.GetCumulativeCount())})
				}
				if bs := m.GetHistogram().GetBucket(); len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
					out = append(out, Sample{name + "_bucket", with("le", "+Inf"), float64(m.GetHistogram().GetSampleCount())})
				}
				out = append(out, Sample{name + "_sum", labels, m.GetHistogram().GetSampleSum()},
					Sample{name + "_count", labels, float64(m.GetHistogram().GetSampleCount())})
			default:
				out = append(out, Sample{name, labels, m.GetUntyped().GetValue()})
			}
		}
	}
	return out
}

// parseMetrics runs expfmt's parser, a panic on malformed text (see
// kubeletmetrics) becoming an error.
func parseMetrics(text string) (fams map[string]*dto.MetricFamily, err error) {
	defer func() {
		if r := recover(); r != nil {
			fams, err = nil, fmt.Errorf("malformed metrics text: %v", r)
		}
	}()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(text))
}

var labelRE = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// MetricValue reads one sample from /metrics text by its series as
// Prometheus writes it (name{a="x",b="y"}, or the name alone); -1 when
// absent.
func MetricValue(text, series string) float64 {
	name, set, _ := strings.Cut(series, "{")
	want := map[string]string{}
	for _, m := range labelRE.FindAllStringSubmatch(set, -1) {
		want[m[1]] = m[2]
	}
	for _, s := range Scrape(text) {
		if s.Name == name && maps.Equal(s.Labels, want) {
			return s.Value
		}
	}
	return -1
}

// SeriesOf reads the samples of one metric from Prometheus text, by their
// series as Prometheus writes them (Sample.String).
func SeriesOf(text, name string) map[string]float64 {
	series := map[string]float64{}
	for _, s := range Scrape(text) {
		if s.Name == name {
			series[s.String()] = s.Value
		}
	}
	return series
}

// SumSeries is the sum of the samples of one metric.
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
