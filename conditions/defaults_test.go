package conditions_test

import (
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/leases"
	"github.com/hangwatch/hangwatch/observations"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newDefaultEngine(t *testing.T, available ...string) (*conditions.Engine, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(t0)
	e, err := conditions.NewEngine(conditions.DefaultSpecs(), clk, conditions.EngineOptions{Available: available})
	if err != nil {
		t.Fatal(err)
	}
	return e, clk
}

func condition(t *testing.T, e *conditions.Engine, condType string) conditions.Condition {
	t.Helper()
	for _, c := range e.Set().Snapshot() {
		if c.Type == condType {
			return c
		}
	}
	t.Fatalf("no condition %s in %v", condType, e.Set().Types())
	return conditions.Condition{}
}

func TestDefaultRuntimeHungRule(t *testing.T) {
	ok := func(m string) cri.CallResult { return cri.CallResult{Method: m, Class: cri.ClassOK} }
	hung := func(m, obj string) cri.CallResult {
		return cri.CallResult{Method: m, Object: obj, Class: cri.ClassTimeout}
	}
	cases := []struct {
		name        string
		calls       []cri.CallResult
		status      conditions.Status
		reason, msg string
	}{
		{"all answered", []cri.CallResult{ok("Version"), ok("Status"), {Method: "Status", Class: cri.ClassSlow}}, conditions.StatusFalse,
			"RuntimeResponsive", "all probed CRI calls answered within 2s"},
		{"one list hangs", []cri.CallResult{ok("Version"), ok("Status"), hung("ListPodSandbox", "")}, conditions.StatusTrue,
			"ListPodSandboxHung", "CRI calls not answered within 2s: ListPodSandbox"},
		{"one container hangs", []cri.CallResult{ok("Version"), hung("ContainerStatus", "0123456789abcdef")}, conditions.StatusTrue,
			"ContainerStatusHung", "CRI calls not answered within 2s: ContainerStatus(0123456789abc)"},
		{"everything hangs", []cri.CallResult{hung("Version", ""), hung("Status", ""), hung("ListContainers", "")}, conditions.StatusTrue,
			"RuntimeNotResponding", "CRI calls not answered within 2s: ListContainers, Status, Version"},
		{"socket gone", []cri.CallResult{{Method: "Version", Class: cri.ClassUnreachable}, {Method: "Status", Class: cri.ClassUnreachable}},
			conditions.StatusTrue, "RuntimeUnreachable", "the container runtime's CRI socket does not accept calls"},
		{"errors are not hangs", []cri.CallResult{ok("Version"), {Method: "ImageFsInfo", Class: cri.ClassError}}, conditions.StatusFalse,
			"RuntimeResponsive", "all probed CRI calls answered within 2s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newDefaultEngine(t, "cri")
			e.Observe(cri.Cycle{Calls: tc.calls}.Observation(2 * time.Second))
			c := condition(t, e, conditions.TypeRuntimeHung)
			if c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.msg {
				t.Fatalf("got %s %s %q, want %s %s %q", c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.msg)
			}
		})
	}
}

// leaseObs is the lease input of a read taking 10ms that found the Lease
// (or not) with missed renewals, from leases' own Observation.
func leaseObs(found bool, missed int) observations.Lease {
	interval := 10 * time.Second
	return leases.Observation{Readable: true, ReadLatency: 10 * time.Millisecond, Found: found, RenewInterval: interval,
		RenewAge: time.Duration(missed)*interval + time.Second, Grace: 50 * time.Second}.Fields()
}

func silentKubelet(missed int, readable bool) observations.Lease {
	o := leaseObs(true, missed)
	o.Healthz, o.KubeletSilent, o.Readable = leases.HealthzNoAnswer, true, readable
	return o
}

func unreadable(readError string, missed int) observations.Lease {
	o := leaseObs(true, missed)
	o.Readable, o.ReadError = false, readError
	return o
}

type leaseStep struct {
	obs    observations.Lease
	status conditions.Status
	reason string
}

// observeLease hands each step's observation to e and checks where
// KubeletUnresponsive is after it.
func observeLease(t *testing.T, e *conditions.Engine, steps []leaseStep) {
	t.Helper()
	for i, s := range steps {
		e.Observe(s.obs)
		if c := condition(t, e, conditions.TypeKubeletUnresponsive); c.Status != s.status || c.Reason != s.reason {
			t.Fatalf("step %d: %s %s, want %s %s", i, c.Status, c.Reason, s.status, s.reason)
		}
	}
}

func slowRead(missed int) observations.Lease {
	o := leaseObs(true, missed)
	o.ReadSeconds = 3.5
	return o
}

// TestKubeletUnresponsiveIsUnknownWhileLeaseReadsFail: late renewals seen
// through failing or slow reads may be the API server's doing; the
// condition says it cannot tell, and leaves Unknown after 2 good reads.
func TestKubeletUnresponsiveIsUnknownWhileLeaseReadsFail(t *testing.T) {
	e, _ := newDefaultEngine(t, "lease")
	steps := []leaseStep{
		{leaseObs(true, 0), conditions.StatusFalse, "NodeLeaseRenewed"},
		{unreadable("forbidden", 0), conditions.StatusUnknown, "LeaseUnreadable"},
		{leaseObs(true, 0), conditions.StatusUnknown, "LeaseUnreadable"}, // one good read is not enough
		{leaseObs(true, 0), conditions.StatusFalse, "NodeLeaseRenewed"},
		{slowRead(3), conditions.StatusUnknown, "LeaseReadSlow"}, // not True: the read itself crawled
		{leaseObs(true, 3), conditions.StatusUnknown, "LeaseReadSlow"},
		{unreadable("timeout", 4), conditions.StatusUnknown, "LeaseUnreadable"},
		{leaseObs(true, 3), conditions.StatusUnknown, "LeaseUnreadable"},
		{leaseObs(true, 3), conditions.StatusTrue, "NodeLeaseNotRenewed"}, // two good reads agree: the kubelet is late
	}
	observeLease(t, e, steps)
	e.Observe(unreadable("forbidden", 0))
	want := "hangwatch cannot read the node Lease (forbidden), so it cannot tell whether the kubelet renews it"
	if c := condition(t, e, conditions.TypeKubeletUnresponsive); c.Message != want {
		t.Fatalf("message %q, want %q", c.Message, want)
	}
}

func TestDefaultKubeletUnresponsiveRule(t *testing.T) {
	e, _ := newDefaultEngine(t, "lease")
	steps := []leaseStep{
		{leaseObs(true, 0), conditions.StatusFalse, "NodeLeaseRenewed"},
		{leaseObs(true, 1), conditions.StatusFalse, "NodeLeaseRenewed"},
		{leaseObs(true, 2), conditions.StatusTrue, "NodeLeaseNotRenewed"},
		{leaseObs(true, 0), conditions.StatusFalse, "NodeLeaseRenewed"},
		{leaseObs(false, 0), conditions.StatusFalse, "NodeLeaseRenewed"}, // a kubelet just started creates it within seconds
		{leaseObs(false, 1), conditions.StatusFalse, "NodeLeaseRenewed"},
		{leaseObs(false, 2), conditions.StatusTrue, "NodeLeaseMissing"},
	}
	observeLease(t, e, steps)
	want := "the kubelet missed 2 or more renewals of its node Lease (due every 10s); " +
		"the node lifecycle controller marks the node Unknown 50s after the last renewal"
	e.Observe(leaseObs(true, 3))
	if c := condition(t, e, conditions.TypeKubeletUnresponsive); c.Message != want {
		t.Fatalf("message %q, want %q", c.Message, want)
	}
}

// TestKubeletNotAnsweringComesFirst: a kubelet whose local /healthz gets
// no answer is KubeletUnresponsive at once, whatever the Lease or the API
// server say; repair restarts it only for this reason.
func TestKubeletNotAnsweringComesFirst(t *testing.T) {
	e, _ := newDefaultEngine(t, "lease")
	observeLease(t, e, []leaseStep{
		{leaseObs(true, 0), conditions.StatusFalse, "NodeLeaseRenewed"},
		{silentKubelet(0, true), conditions.StatusTrue, "KubeletNotAnswering"},
		{silentKubelet(3, false), conditions.StatusTrue, "KubeletNotAnswering"},
		{leaseObs(true, 3), conditions.StatusTrue, "NodeLeaseNotRenewed"},
		{leaseObs(true, 0), conditions.StatusFalse, "NodeLeaseRenewed"},
	})
}

// TestALateLeaseWhileTheKubeletAnswersIsUnknown: a kubelet that answers
// on the node but whose renewals do not land is not unresponsive; the
// condition says it cannot tell (the Lease-based reason), which neither
// repair nor hangwatch-remedy acts on.
func TestALateLeaseWhileTheKubeletAnswersIsUnknown(t *testing.T) {
	e, _ := newDefaultEngine(t, "lease")
	lateAnswering := func(missed int) observations.Lease {
		o := leaseObs(true, missed)
		o.Healthz, o.LateWhileAnswering = leases.HealthzOK, true
		return o
	}
	observeLease(t, e, []leaseStep{
		{leaseObs(true, 0), conditions.StatusFalse, "NodeLeaseRenewed"},
		{lateAnswering(2), conditions.StatusUnknown, "NodeLeaseNotRenewed"},
		{lateAnswering(0), conditions.StatusUnknown, "NodeLeaseNotRenewed"},       // held
		{silentKubelet(3, true), conditions.StatusUnknown, "NodeLeaseNotRenewed"}, // Unknown is left on the second look
		{silentKubelet(3, true), conditions.StatusTrue, "KubeletNotAnswering"},
		{leaseObs(true, 0), conditions.StatusFalse, "NodeLeaseRenewed"},
	})
	e.Observe(lateAnswering(2))
	if c := condition(t, e, conditions.TypeKubeletUnresponsive); !strings.Contains(c.Message, "its writes do not reach the API server") {
		t.Fatalf("message %q", c.Message)
	}
}

func TestDefaultKernelRuleFollowsTheKernelMonitor(t *testing.T) {
	e, _ := newDefaultEngine(t, "kernel")
	active := kernellog.ConditionState{Type: conditions.TypeKernelDeadlock, Active: true,
		Reason: "ContainerRuntimeTaskBlocked", Message: "task containerd blocked"}
	e.Observe(observations.Kernel{active.Type: active.Fields()})
	if c := condition(t, e, conditions.TypeKernelDeadlock); c.Status != conditions.StatusTrue || c.Reason != "ContainerRuntimeTaskBlocked" {
		t.Fatalf("got %+v", c)
	}
}

// TestDefaultPodStartStuckRule: a pod that has waited 45s for its sandbox
// with none started for 45s is the write path stuck, while the runtime
// answers reads, and so does a container whose create or start has not
// answered while no other started; a burst still starting, or a wait under 45s, is not; a
// runtime that does not answer reads either is RuntimeHung's, and
// PodStartStuck cannot tell.
func TestDefaultPodStartStuckRule(t *testing.T) {
	e, _ := newDefaultEngine(t, "cri", "podStarts")
	answering := observations.CRI{HungCalls: []string{}, Timeout: "2s"}
	e.Observe(answering)
	steps := []struct {
		obs    observations.PodStarts
		cri    observations.CRI
		status conditions.Status
		reason string
	}{
		{observations.PodStarts{SinceSandboxStartedSeconds: 600}, answering, conditions.StatusFalse, "PodsStart"},
		{observations.PodStarts{Waiting: 3, OldestWaitingSeconds: 50, OldestPod: "default/web-0", SinceSandboxStartedSeconds: 2}, answering,
			conditions.StatusFalse, "PodsStart"}, // a burst: sandboxes still start
		{observations.PodStarts{Waiting: 1, OldestWaitingSeconds: 40, OldestPod: "default/web-0", SinceSandboxStartedSeconds: 600}, answering,
			conditions.StatusFalse, "PodsStart"},
		{observations.PodStarts{Waiting: 1, OldestWaitingSeconds: 45, OldestPod: "default/web-0", OldestRuntimeClass: "nvidia", SinceSandboxStartedSeconds: 600},
			answering, conditions.StatusTrue, "SandboxStartStuck"},
		{observations.PodStarts{Waiting: 1, OldestWaitingSeconds: 60, OldestPod: "default/web-0", SinceSandboxStartedSeconds: 600},
			observations.CRI{Unreachable: true, HungCalls: []string{}}, conditions.StatusUnknown, "RuntimeNotAnswering"},
		{observations.PodStarts{Waiting: 1, OldestWaitingSeconds: 45, OldestPod: "default/web-0", OldestSandboxStep: "network", SinceSandboxStartedSeconds: 600},
			answering, conditions.StatusTrue, "NetworkSetupStuck"},
		{containerWait(50, 600, "create"), answering, conditions.StatusTrue, "ContainerCreateStuck"},
		{containerWait(50, 600, "start"), answering, conditions.StatusTrue, "ContainerStartStuck"},
		{containerWait(50, 10, "start"), answering, conditions.StatusFalse, "PodsStart"}, // others start
		{containerWait(40, 600, "create"), answering, conditions.StatusFalse, "PodsStart"},
		{observations.PodStarts{SinceSandboxStartedSeconds: 600, ProbeInFlightSeconds: 44}, answering, conditions.StatusFalse, "PodsStart"},
		{observations.PodStarts{SinceSandboxStartedSeconds: 600, ProbeInFlightSeconds: 45}, answering, conditions.StatusTrue, "ProbeSandboxStuck"},
		{containerWait(50, 600, "create"), observations.CRI{HungCalls: []string{"ListContainers"}}, conditions.StatusUnknown, "RuntimeNotAnswering"},
	}
	for i, s := range steps {
		e.Observe(s.cri)
		e.Observe(s.obs)
		c := condition(t, e, "PodStartStuck")
		if c.Status != s.status || c.Reason != s.reason {
			t.Fatalf("step %d: %s %s (%s), want %s %s", i, c.Status, c.Reason, c.Message, s.status, s.reason)
		}
		if i == 3 && !strings.Contains(c.Message, "pod default/web-0 (runtime class nvidia) has waited 45s or more") {
			t.Errorf("message %q", c.Message)
		}
		if i == 5 && !strings.Contains(c.Message, "pod default/web-0 has waited 45s or more for its sandbox, and containerd has not got as far as its sandbox container") {
			t.Errorf("message %q", c.Message)
		}
		if i == 6 && !strings.Contains(c.Message, "container default/gpu-0/app (runtime class nvidia) has waited 45s or more for the container runtime to create it") {
			t.Errorf("message %q", c.Message)
		}
	}
	// from an Unknown the rule chose, False after settling verdicts
	e.Observe(answering)
	for range 3 {
		e.Observe(observations.PodStarts{SinceSandboxStartedSeconds: 1})
	}
	if c := condition(t, e, "PodStartStuck"); c.Status != conditions.StatusFalse || c.Reason != "PodsStart" {
		t.Fatalf("after a start: %s %s, want False PodsStart", c.Status, c.Reason)
	}
}

// containerWait is a container of gpu-0 (runtime class nvidia) waiting
// on step for waited seconds, none other started for since.
func containerWait(waited, since float64, step string) observations.PodStarts {
	return observations.PodStarts{SinceSandboxStartedSeconds: 600, ContainersWaiting: 1, OldestContainerWaitingSeconds: waited,
		OldestContainer: "default/gpu-0/app", OldestContainerStep: step, OldestContainerRuntimeClass: "nvidia", SinceContainerStartedSeconds: since}
}
