package main

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

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
	f := &policyFile{path: path}
	if path == "" {
		f.current.Store(remedy.DefaultPolicy())
		return f, nil
	}
	raw, err := boundedfile.Read(path, remedy.MaxPolicyBytes)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	p, err := remedy.DecodePolicy(raw)
	if err != nil {
		return nil, fmt.Errorf("--config %s:\n%w", path, err)
	}
	f.current.Store(p)
	f.raw = raw
	return f, nil
}

func (f *policyFile) get() *remedy.Policy { return f.current.Load() }

// watch reads the file every period until ctx ends.
func (f *policyFile) watch(ctx context.Context, period time.Duration) {
	if f.path == "" {
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		raw, err := boundedfile.Read(f.path, remedy.MaxPolicyBytes)
		if err != nil || bytes.Equal(raw, f.raw) {
			continue
		}
		f.raw = raw
		p, err := remedy.DecodePolicy(raw) // the content just read, not the file read again
		if err != nil {
			klog.ErrorS(err, "Policy reload refused; the running policy stays", "path", f.path)
			continue
		}
		f.current.Store(p)
		klog.InfoS("Reloaded the policy", "path", f.path, "paused", p.Paused, "dryRun", p.DryRun)
	}
}

func metav1ObjectMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace}
}
