package manager

import (
	"bytes"
	"context"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/boundedfile"
	"github.com/hangwatch/hangwatch/remedy"
)

// policyFile holds the policy in effect and reloads it when the file
// changes (a ConfigMap update, to pause or dry-run, say); a file that
// fails the checks is refused and the running policy stays.
type policyFile struct {
	path    string
	current atomic.Pointer[remedy.Policy]
	raw     []byte
}

func newPolicyFile(path string) (*policyFile, error) {
	p, raw, err := remedy.ReadPolicyFile(path)
	if err != nil {
		return nil, err
	}
	f := &policyFile{path: path, raw: raw}
	f.current.Store(p)
	return f, nil
}

func (f *policyFile) get() *remedy.Policy { return f.current.Load() }

// watch reads the file every period until ctx ends.
func (f *policyFile) watch(ctx context.Context, clk clock.WithTicker, period time.Duration) {
	if f.path == "" {
		return
	}
	t := clk.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		f.reload()
	}
}

func (f *policyFile) reload() {
	raw, err := boundedfile.Read(f.path, remedy.MaxPolicyBytes)
	if err != nil || bytes.Equal(raw, f.raw) {
		return
	}
	f.raw = raw
	p, err := remedy.DecodePolicy(raw) // the content just read, not the file read again
	if err != nil {
		klog.ErrorS(err, "Policy reload refused; the running policy stays", "path", f.path)
		return
	}
	f.current.Store(p)
	klog.InfoS("Reloaded the policy", "path", f.path, "paused", p.Paused, "dryRun", p.DryRun)
}
