package harness

import "testing"

func TestMetricValueReadsTheSeriesAsWritten(t *testing.T) {
	text := "# TYPE a_total counter\na_total{method=\"X\",result=\"ok\"} 3\na_total{method=\"Y\",result=\"ok\"} 4\n" +
		"# TYPE g gauge\ng 1.5\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4\nh_count 3\n"
	for series, want := range map[string]float64{`a_total{method="Y",result="ok"}`: 4, `g`: 1.5, `h_count`: 3, `h_bucket{le="1"}`: 2, `nope`: -1} {
		if got := MetricValue(text, series); got != want {
			t.Errorf("MetricValue(%s) = %v, want %v", series, got, want)
		}
	}
	if s := SeriesOf(text, "a_total"); len(s) != 2 || s[`a_total{method="X",result="ok"}`] != 3 {
		t.Errorf("SeriesOf(a_total) = %v", s)
	}
	if got := SumSeries(text, "a_total"); got != 7 {
		t.Errorf("SumSeries(a_total) = %v, want 7", got)
	}
}
