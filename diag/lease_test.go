package diag

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/leases"
)

func TestLeaseTableSaysWhatWasNotRead(t *testing.T) {
	var out bytes.Buffer
	if err := writeLeaseTable(&out, &leases.Report{Node: "node-a", Error: "forbidden"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "NODE LEASE  not read: forbidden") {
		t.Fatalf("table %q", out.String())
	}
	out.Reset()
	if err := writeLeaseTable(&out, leases.NewReport("node-a", leases.Observation{Grace: time.Minute})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kube-node-lease/node-a does not exist") {
		t.Fatalf("table %q", out.String())
	}
}

func TestLeaseTableRoundsAsTheObservationDoes(t *testing.T) {
	o := leases.Observation{Found: true, RenewTime: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), RenewAge: 12345678 * time.Microsecond,
		RenewInterval: 10 * time.Second, Grace: 50 * time.Second}
	var out bytes.Buffer
	if err := writeLeaseTable(&out, leases.NewReport("node-a", o)); err != nil {
		t.Fatal(err)
	}
	if want := "kube-node-lease/node-a renewed 12.3s ago (due every 10s, 1 missed); 37.7s of the 50s grace left"; !strings.Contains(out.String(), want) {
		t.Fatalf("table %q, want %q", out.String(), want)
	}
}
