package kubeletmetrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ErrEmpty is returned for a body without a single sample.
var ErrEmpty = errors.New("no metrics in the response")

// Parse reads the Prometheus text format, as the kubelet serves it, into a
// Snapshot. Malformed or truncated text is an error naming the line
// ("text format parsing error in line 12: ..."); nothing here panics on
// any input (see FuzzParse).
func Parse(r io.Reader) (*Snapshot, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return ParseBytes(body)
}

// ParseBytes is Parse of a body already read.
func ParseBytes(body []byte) (*Snapshot, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, ErrEmpty
	}
	if body[len(body)-1] != '\n' {
		// The text format ends every sample line with a newline; a body
		// that stops inside a line was cut short.
		return nil, fmt.Errorf("metrics text truncated: line %d has no end", bytes.Count(body, []byte{'\n'})+1)
	}
	if err := checkLineStarts(body); err != nil {
		return nil, err
	}
	read, err := keepReadFamilies(body)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	families, err := parseText(read)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return fromFamilies(families), nil
}

// parseText runs expfmt's parser. The parser (prometheus/common v0.62 to
// at least v0.67) can panic on some malformed input, found by FuzzParse; a
// panic becomes an error here, so a kubelet's garbage never takes the
// daemon down.
func parseText(body []byte) (fams map[string]*dto.MetricFamily, err error) {
	defer func() {
		if r := recover(); r != nil {
			fams, err = nil, fmt.Errorf("text format parser failed on malformed input: %v", r)
		}
	}()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(body))
}

// checkLineStarts rejects a sample line that does not begin with a metric
// name, naming the line: expfmt panics on some of them (a line of "{}").
func checkLineStarts(body []byte) (err error) {
	forEachLine(body, func(n int, line []byte) bool {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 || line[0] == '#' || isNameStart(line[0]) {
			return true
		}
		err = fmt.Errorf("parse metrics: line %d: a sample must start with a metric name, got %q", n, truncate(line, 40))
		return false
	})
	return err
}

func isNameStart(c byte) bool {
	return c == '_' || c == ':' || c == '"' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// family is the part of a metric family this package reads.
type family = dto.MetricFamily

// label returns the value of label name on m, or "".
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// scalar is the value of a counter, gauge or untyped sample.
func scalar(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}
