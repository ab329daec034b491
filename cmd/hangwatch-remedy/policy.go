package main

import (
	"bytes"
	"context"
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
	p, err := remedy.LoadPolicyFile(path)
	if err != nil {
		return nil, err
	}
	f := &policyFile{path: path}
	f.current.Store(p)
	if path != "" {
		f.raw, _ = boundedfile.Read(path, remedy.MaxPolicyBytes)
	}
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
		p, err := remedy.LoadPolicyFile(f.path)
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
