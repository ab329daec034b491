package fencing

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestRequestAndAttestationRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	r := Request{ID: "f-1", BootID: "b00t", Deadline: at, ValidFor: time.Minute}
	got, ok, err := ParseRequest(r.Annotations())
	if !ok || err != nil || got != r {
		t.Fatalf("request = %+v %v %v, want %+v", got, ok, err, r)
	}
	a := Attestation{RequestID: "f-1", BootID: "b00t", Pods: []string{"0a-1", "0b-2"}, At: at, Outcome: OutcomeFenced}
	back, ok, err := ParseAttestation(a.Annotations())
	if !ok || err != nil || back.RequestID != "f-1" || len(back.Pods) != 2 || !back.Fenced() {
		t.Fatalf("attestation = %+v %v %v", back, ok, err)
	}
	n := &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: "b00t"}}}
	if !back.Answers(r, n) {
		t.Error("the attestation does not answer its request")
	}
	n.Status.NodeInfo.BootID = "rebooted"
	if back.Answers(r, n) {
		t.Error("an attestation of another boot answers")
	}
	imp := Attestation{RequestID: "f-1", BootID: "b00t", At: at, Outcome: OutcomeImpossible, Why: "pid 7 (dd) is in D state"}
	back, _, err = ParseAttestation(imp.Annotations())
	if err != nil || back.Fenced() || back.Why != imp.Why {
		t.Errorf("impossible = %+v %v", back, err)
	}
}

func TestMalformedAnnotationsNameTheField(t *testing.T) {
	r := Request{ID: "f-1", BootID: "b", Deadline: time.Now(), ValidFor: time.Minute}.Annotations()
	r[RequestValidForAnnotation] = "1h"
	if _, _, err := ParseRequest(r); err == nil || !strings.Contains(err.Error(), RequestValidForAnnotation) {
		t.Errorf("err = %v, want it to name %s", err, RequestValidForAnnotation)
	}
	a := Attestation{RequestID: "f-1", BootID: "b", Pods: []string{"x y"}, At: time.Now(), Outcome: OutcomeFenced}.Annotations()
	if _, _, err := ParseAttestation(a); err == nil || !strings.Contains(err.Error(), AttestedPodsAnnotation) {
		t.Errorf("err = %v, want it to name %s", err, AttestedPodsAnnotation)
	}
}

func FuzzParseAnnotations(f *testing.F) {
	f.Add("f-1", "b", "2026-11-27T06:00:00Z", "1m", "a-1,b-2", "Fenced")
	f.Add("F", "", "x", "-1s", ",", "Impossible: x")
	f.Fuzz(func(t *testing.T, id, boot, when, valid, pods, outcome string) {
		r, ok, err := ParseRequest(map[string]string{RequestAnnotation: id, RequestBootIDAnnotation: boot,
			RequestDeadlineAnnotation: when, RequestValidForAnnotation: valid})
		if ok && err == nil && (r.ValidFor <= 0 || !idRE.MatchString(r.ID)) {
			t.Fatalf("accepted %+v", r)
		}
		a, ok, err := ParseAttestation(map[string]string{AttestedAnnotation: id, AttestedBootIDAnnotation: boot,
			AttestedPodsAnnotation: pods, AttestedAtAnnotation: when, OutcomeAnnotation: outcome})
		if ok && err == nil && len(a.Pods) > MaxPods {
			t.Fatalf("accepted %d pods", len(a.Pods))
		}
	})
}
