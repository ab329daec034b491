package podstarts

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
)

func marshal(t *testing.T, p *corev1.Pod) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestApplyFollowsTheStream: the kubelet's events, as the Pods API sends
// them (pod bytes of v1.Pod's Marshal), and what is refused with the
// field and value named.
func TestApplyFollowsTheStream(t *testing.T) {
	tr := NewTracker(clocktesting.NewFakeClock(time.Now()), asking{"web-0": true}.asked, nil)
	tr.Resync()
	for _, ev := range []struct {
		typ podsv1alpha1.EventType
		raw []byte
	}{
		{podsv1alpha1.EventType_ADDED, marshal(t, pod("web-0", corev1.ConditionFalse))},
		{podsv1alpha1.EventType_ADDED, marshal(t, pod("gone", corev1.ConditionFalse))},
		{podsv1alpha1.EventType_INITIAL_SYNC_COMPLETE, nil},
		{podsv1alpha1.EventType_DELETED, marshal(t, pod("gone", ""))},
	} {
		if err := Apply(tr, ev.typ, ev.raw); err != nil {
			t.Fatal(err)
		}
	}
	if obs, ok := tr.Observe(context.Background()); !ok || obs.Waiting != 1 {
		t.Fatalf("%+v %v", obs, ok)
	}
	for _, bad := range []struct {
		typ  podsv1alpha1.EventType
		raw  []byte
		want string
	}{
		{podsv1alpha1.EventType(9), nil, "type 9"},
		{podsv1alpha1.EventType_MODIFIED, []byte{0xff, 0xff}, "MODIFIED event"},
		{podsv1alpha1.EventType_ADDED, marshal(t, &corev1.Pod{}), "metadata.uid"},
	} {
		if err := Apply(tr, bad.typ, bad.raw); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v %x: %v, want an error naming %q", bad.typ, bad.raw, err, bad.want)
		}
	}
}

// FuzzApply: nothing the stream sends panics the tracker.
func FuzzApply(f *testing.F) {
	f.Add(int32(1), []byte{})
	p := pod("web-0", corev1.ConditionFalse)
	b, _ := p.Marshal()
	f.Add(int32(2), b)
	f.Fuzz(func(t *testing.T, typ int32, raw []byte) {
		tr := NewTracker(clocktesting.NewFakeClock(time.Now()), func(string, string, string, string) bool { return true }, nil)
		tr.Resync()
		_ = Apply(tr, podsv1alpha1.EventType(typ), raw)
		tr.Synced()
		tr.Observe(context.Background())
	})
}
