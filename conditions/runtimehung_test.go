package conditions

import "testing"

func TestEvaluateRuntimeHung(t *testing.T) {
	ok := func(m string) CallObservation { return CallObservation{Method: m, Result: "ok"} }
	hung := func(m, obj string) CallObservation {
		return CallObservation{Method: m, Object: obj, Result: "timeout"}
	}
	cases := []struct {
		name        string
		calls       []CallObservation
		bad         bool
		reason, msg string
	}{
		{"all answered", []CallObservation{ok("Version"), ok("Status"), {Method: "Status", Result: "slow"}}, false,
			ReasonRuntimeResponsive, "all probed CRI calls answered within 2s"},
		{"one list hangs", []CallObservation{ok("Version"), ok("Status"), hung("ListPodSandbox", "")}, true,
			"ListPodSandboxHung", "CRI calls not answered within 2s: ListPodSandbox"},
		{"one container hangs", []CallObservation{ok("Version"), hung("ContainerStatus", "0123456789abcdef")}, true,
			"ContainerStatusHung", "CRI calls not answered within 2s: ContainerStatus(0123456789abc)"},
		{"everything hangs", []CallObservation{hung("Version", ""), hung("Status", ""), hung("ListContainers", "")}, true,
			ReasonRuntimeNotResponding, "CRI calls not answered within 2s: ListContainers, Status, Version"},
		{"socket gone", []CallObservation{{Method: "Version", Result: "unreachable"}, {Method: "Status", Result: "unreachable"}}, true,
			ReasonRuntimeUnreachable, "the container runtime's CRI socket does not accept calls"},
		{"errors are not hangs", []CallObservation{ok("Version"), {Method: "ImageFsInfo", Result: "error"}}, false,
			ReasonRuntimeResponsive, "all probed CRI calls answered within 2s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := EvaluateRuntimeHung(RuntimeObservation{Calls: tc.calls, Timeout: "2s"})
			if v.Bad != tc.bad || v.Reason != tc.reason || v.Message != tc.msg {
				t.Fatalf("got %+v, want bad=%v %s %q", v, tc.bad, tc.reason, tc.msg)
			}
		})
	}
}
