package kubeletmetrics

import (
	"os"
	"testing"
)

func TestPutsCountTheKubeletsLeaseRenewals(t *testing.T) {
	body, err := os.ReadFile("testdata/kubelet-1.34-healthy.prom")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseBytes(body)
	if err != nil {
		t.Fatal(err)
	}
	if s.Puts != (Puts{Present: true, OK: 31}) {
		t.Fatalf("a real kubelet's PUTs: %+v, want 31 ok", s.Puts)
	}
	s, err = ParseBytes([]byte(`# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="h",method="PUT"} 40
rest_client_requests_total{code="422",host="h",method="PUT"} 3
rest_client_requests_total{code="<error>",host="h",method="PUT"} 2
rest_client_requests_total{code="500",host="h",method="PATCH"} 7
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Puts != (Puts{Present: true, OK: 40, Failed: 5}) {
		t.Fatalf("refused and unanswered PUTs: %+v, want 40 ok and 5 failed (a PATCH is not a renewal)", s.Puts)
	}
	if s, _ = ParseBytes([]byte("kubelet_pleg_discard_events 0\n")); s.Puts.Present {
		t.Fatalf("no rest_client_requests_total: %+v", s.Puts)
	}
}
