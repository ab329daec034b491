package leases

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestReportRoundsAsTheObservationDoes(t *testing.T) {
	o := Observation{Found: true, RenewTime: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), RenewAge: 12345678 * time.Microsecond,
		RenewInterval: 10 * time.Second, Grace: 50 * time.Second}
	r := NewReport("node-a", o)
	m := o.Fields()
	if r.RenewAgeSeconds != m.RenewAgeSeconds || r.SecondsLeft != m.SecondsLeft || r.MissedRenewals != 1 {
		t.Fatalf("report %+v, observation %v: want the same figures", r, m)
	}
	var out bytes.Buffer
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if want := "kube-node-lease/node-a renewed 12.3s ago (due every 10s, 1 missed); 37.7s of the 50s grace left"; !strings.Contains(out.String(), want) {
		t.Fatalf("table %q, want %q", out.String(), want)
	}
}

func TestReportSaysWhatWasNotRead(t *testing.T) {
	var out bytes.Buffer
	if err := (&Report{Node: "node-a", Error: "forbidden"}).WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "NODE LEASE  not read: forbidden") {
		t.Fatalf("table %q", out.String())
	}
	out.Reset()
	if err := NewReport("node-a", Observation{Grace: time.Minute}).WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kube-node-lease/node-a does not exist") {
		t.Fatalf("table %q", out.String())
	}
}
