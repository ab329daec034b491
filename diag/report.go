package diag

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/leases"
	"github.com/hangwatch/hangwatch/pleg"
	"github.com/hangwatch/hangwatch/repair"
)

// Report is diag's output: the CRI report with the kernel log's matches,
// the node Lease, PLEG health and repair's reach beside it. The JSON keys
// are stable and documented.
type Report struct {
	CRIReport
	Kernel *KernelSection `json:"kernel,omitempty"`
	Lease  *leases.Report `json:"lease,omitempty"`
	PLEG   *PLEGReport    `json:"pleg,omitempty"`
	Repair *repair.Report `json:"repair,omitempty"`
	// PodStarts is the write path, where the kubelet serves its Pods API.
	PodStarts *PodStartsReport `json:"podStarts,omitempty"`
}

// Healthy reports whether the runtime answered well, the PLEG is not
// Unhealthy and no pod start is Stuck: diag exits 0 then. The other
// sections do not change it.
func (r *Report) Healthy() bool {
	return r.Verdict == VerdictHealthy && (r.PLEG == nil || r.PLEG.Verdict != pleg.VerdictUnhealthy) &&
		(r.PodStarts == nil || r.PodStarts.Verdict != PodStartsStuck)
}

// Write prints r as a table (crictl's style), JSON or YAML.
func Write(w io.Writer, format string, r *Report) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "yaml":
		data, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode the report as YAML: %w", err)
		}
		_, err = w.Write(data)
		return err
	case "table":
		return writeTable(w, r)
	}
	return fmt.Errorf("output format %q: want table, json or yaml", format)
}

// writeTable prints each section that is there, the CRI report first.
func writeTable(w io.Writer, r *Report) error {
	if err := writeCRITable(w, r.CRIReport); err != nil {
		return err
	}
	if r.Kernel != nil {
		if err := writeKernelTable(w, r.Kernel); err != nil {
			return err
		}
	}
	if r.Lease != nil {
		if err := writeLeaseTable(w, r.Lease); err != nil {
			return err
		}
	}
	if r.PLEG != nil {
		if err := r.PLEG.writeTable(w); err != nil {
			return err
		}
	}
	if r.PodStarts != nil {
		if err := r.PodStarts.writeTable(w); err != nil {
			return err
		}
	}
	if r.Repair != nil {
		return writeRepairTable(w, r.Repair)
	}
	return nil
}
