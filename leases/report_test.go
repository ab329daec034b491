package leases

import (
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
	if r.RenewAgeSeconds != 12.346 || r.SecondsLeft != 37.654 || r.GraceSeconds != 50 || r.RenewIntervalSeconds != 10 {
		t.Fatalf("report %+v: want 12.346s old, 37.654s of the 50s grace left, due every 10s", r)
	}
}

func TestReportOfNoLease(t *testing.T) {
	r := NewReport("node-a", Observation{Grace: time.Minute})
	if r.Found || r.RenewTime != nil || r.GraceSeconds != 60 {
		t.Fatalf("report %+v: want not found, with the grace", r)
	}
}
