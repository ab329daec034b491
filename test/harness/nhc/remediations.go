package nhc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// RemediationEvent is one change of a SelfNodeRemediation, as the watch
// saw it.
type RemediationEvent struct {
	Type watch.EventType
	Name string
	// Seen is when the watch delivered it, on the test's clock.
	Seen time.Time
	// Created is the object's creationTimestamp (whole seconds).
	Created time.Time
	Obj     *unstructured.Unstructured
}

// RemediationLog records every SelfNodeRemediation change in Namespace.
type RemediationLog struct {
	mu     sync.Mutex
	events []RemediationEvent
}

// RecordRemediations watches SelfNodeRemediations until t ends; there
// must be none yet.
func (c *Cluster) RecordRemediations(t *testing.T) *RemediationLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := c.Dynamic.Resource(SelfNodeRemediationGVR).Namespace(Namespace)
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		cancel()
		t.Fatalf("%d SelfNodeRemediations before the NodeHealthCheck", len(list.Items))
	}
	l := &RemediationLog{}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		if err := l.record(ctx, res, list.GetResourceVersion()); err != nil {
			t.Errorf("watch SelfNodeRemediations: %v", err)
		}
	}()
	return l
}

// record watches res from rv until ctx ends, watching on from the last
// version seen when the server ends a watch.
func (l *RemediationLog) record(ctx context.Context, res dynamic.ResourceInterface, rv string) error {
	for ctx.Err() == nil {
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				return err
			}
			return nil
		}
		rv, err = l.drain(ctx, w, rv)
		w.Stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// drain records w's events until it ends, and returns the last version
// seen.
func (l *RemediationLog) drain(ctx context.Context, w watch.Interface, rv string) (string, error) {
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			if ctx.Err() != nil {
				break // the test ended the watch
			}
			return rv, apierrors.FromObject(ev.Object)
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		rv = u.GetResourceVersion()
		if ev.Type == watch.Bookmark {
			continue
		}
		l.mu.Lock()
		l.events = append(l.events, RemediationEvent{Type: ev.Type, Name: u.GetName(), Seen: time.Now(), Created: u.GetCreationTimestamp().Time, Obj: u})
		l.mu.Unlock()
	}
	return rv, nil
}

// All is what it recorded so far.
func (l *RemediationLog) All() []RemediationEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]RemediationEvent(nil), l.events...)
}

// Wait waits for the first event of typ for name, failing the test after
// limit or when one of procs exits.
func (l *RemediationLog) Wait(t *testing.T, limit time.Duration, typ watch.EventType, name string, procs ...harness.Watched) RemediationEvent {
	t.Helper()
	var found RemediationEvent
	opts := []harness.WaitOption{}
	for _, p := range procs {
		opts = append(opts, harness.UnlessExited(p))
	}
	harness.Eventually(t, limit, fmt.Sprintf("SelfNodeRemediation %s %s", name, typ), func() bool {
		for _, e := range l.All() {
			if e.Type == typ && e.Name == name {
				found = e
				return true
			}
		}
		return false
	}, opts...)
	return found
}
