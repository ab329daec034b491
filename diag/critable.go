package diag

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hangwatch/hangwatch/cri"
)

// writeCRITable prints the CRI report the way crictl prints tables.
func writeCRITable(w io.Writer, r CRIReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ENDPOINT\t%s (%s)\n", r.Endpoint, r.EndpointSource)
	fmt.Fprintf(tw, "RUNTIME\t%s\n", runtimeText(r.Runtime))
	fmt.Fprintf(tw, "CONDITIONS\t%s\n", conditionsText(r.RuntimeConditions))
	fmt.Fprintf(tw, "LIST STREAMS\t%s\n", streamingText(r))
	fmt.Fprintf(tw, "OBJECTS\t%s sandboxes, %s containers\n", count(r.Sandboxes), count(r.Containers))
	fmt.Fprintf(tw, "LARGEST RESPONSE\t%s\n", sizeText(r.LargestResponse))
	fmt.Fprintf(tw, "SAMPLES\t%d (timeout %gs)\n\n", r.Samples, r.TimeoutSeconds)
	fmt.Fprintln(tw, "METHOD\tCALLS\tP50\tP99\tMAX\tERRORS\tTIMEOUTS")
	for _, c := range r.Calls {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\n", c.Method, c.Count,
			ms(c.P50Seconds), ms(c.P99Seconds), ms(c.MaxSeconds), c.Errors, c.Timeouts)
	}
	if len(r.InFlight) > 0 {
		fmt.Fprintln(tw, "\nIN FLIGHT\tOBJECT\tAGE")
		for _, f := range r.InFlight {
			fmt.Fprintf(tw, "%s\t%s\t%.1fs\n", f.Method, dash(shortID(f.Object)), f.AgeSeconds)
		}
	}
	fmt.Fprintf(tw, "\nVERDICT\t%s\n", r.Verdict)
	for _, reason := range r.Reasons {
		fmt.Fprintf(tw, "  - %s\n", reason)
	}
	return tw.Flush()
}

func runtimeText(rt cri.RuntimeInfo) string {
	if rt.Name == "" {
		return "unknown (Version did not answer)"
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s (CRI %s)", rt.Name, rt.Version, rt.APIVersion))
}

// conditionsText lists the runtime's conditions as Type=status, marking
// the ones the kubelet ignores as information.
func conditionsText(conds []cri.RuntimeCondition) string {
	if len(conds) == 0 {
		return "unknown (Status did not answer)"
	}
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		p := fmt.Sprintf("%s=%t", c.Type, c.Status)
		if !c.Required {
			p += " (information)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// streamingText says whether the runtime implements the list streams and,
// if it does, how soon each stream's first message came.
func streamingText(r CRIReport) string {
	switch r.ListStreaming {
	case cri.StreamingUnimplemented:
		return "not implemented (the kubelet's CRIListStreaming falls back to ListPodSandbox and ListContainers)"
	case cri.StreamingImplemented:
		var firsts []string
		for _, c := range r.Calls {
			if c.FirstMessageP50Seconds != nil {
				firsts = append(firsts, fmt.Sprintf("%s %s", c.Method, ms(*c.FirstMessageP50Seconds)))
			}
		}
		if len(firsts) == 0 {
			return "implemented"
		}
		return "implemented; first message p50: " + strings.Join(firsts, ", ")
	}
	return "unknown (no stream answered)"
}

func sizeText(s ResponseSize) string {
	if s.Bytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%s %d bytes (%.2f%% of the %d MiB limit)", s.Method, s.Bytes,
		100*float64(s.Bytes)/float64(s.LimitBytes), s.LimitBytes>>20)
}

func count(n int) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

// ms prints a duration as crictl-like milliseconds, or seconds past one.
func ms(seconds float64) string {
	if seconds >= 1 {
		return fmt.Sprintf("%.3fs", seconds)
	}
	return fmt.Sprintf("%.1fms", seconds*1000)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
