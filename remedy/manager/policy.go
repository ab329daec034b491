package manager

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/boundedfile"
	"github.com/hangwatch/hangwatch/internal/filewatch"
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

// watch reads the file every period until ctx ends (filewatch).
func (f *policyFile) watch(ctx context.Context, clk clock.WithTicker, period time.Duration) {
	if f.path == "" {
		return
	}
	w := filewatch.Watcher{Path: f.path, Read: func(path string) ([]byte, error) { return boundedfile.Read(path, remedy.MaxPolicyBytes) },
		Poll: period, Clock: clk, Apply: f.apply,
		Refused: func(err error) { klog.ErrorS(err, "Policy reload refused; the running policy stays", "path", f.path) }}
	w.Running(f.raw)
	w.Run(ctx)
}

// apply puts new content of the file in effect.
func (f *policyFile) apply(raw []byte) error {
	p, err := remedy.DecodePolicy(raw)
	if err != nil {
		return err
	}
	f.current.Store(p)
	klog.InfoS("Reloaded the policy", "path", f.path, "paused", p.Paused, "dryRun", p.DryRun)
	return nil
}
