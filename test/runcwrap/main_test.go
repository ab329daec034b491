package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBundleOfCreateAndRunOnly(t *testing.T) {
	for _, c := range []struct {
		args   []string
		bundle string
		ok     bool
	}{
		{[]string{"--root", "/r", "create", "--bundle", "/b", "--pid-file", "p", "id"}, "/b", true},
		{[]string{"--systemd-cgroup", "run", "-b", "/b2", "id"}, "/b2", true},
		{[]string{"create", "--bundle=/b3", "id"}, "/b3", true},
		{[]string{"--root", "/r", "state", "id"}, "", false},
		{[]string{"--version"}, "", false},
	} {
		got, ok := bundleOf(c.args)
		if ok != c.ok || ok && got != c.bundle {
			t.Errorf("bundleOf(%q) = %q, %v; want %q, %v", c.args, got, ok, c.bundle, c.ok)
		}
	}
}

func TestFitSpecKeepsTheRestOfTheSpec(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	spec := `{"ociVersion":"1.2.0","process":{"oomScoreAdj":-997,"args":["/pause"]},"linux":{"resources":{"memory":{"limit":9007199254740993},"hugepageLimits":[{"pageSize":"2MB","limit":0}]}}}`
	if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fitSpec(path, 0, false); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"oomScoreAdj":0`) || !strings.Contains(string(got), `9007199254740993`) || !strings.Contains(string(got), `"/pause"`) ||
		strings.Contains(string(got), "hugepageLimits") {
		t.Errorf("spec after: %s", got)
	}
	if err := fitSpec(path, -1000, false); err != nil { // above the floor, no hugepage limits: left as it is
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(got) {
		t.Errorf("a spec above the floor was rewritten: %s", again)
	}
}

// FuzzFitSpec: any config.json gives an error or a spec, never a panic.
func FuzzFitSpec(f *testing.F) {
	f.Add(`{"process":{"oomScoreAdj":-997}}`)
	f.Add(`{"process":{"oomScoreAdj":"x"}}`)
	f.Add(`{"process":null}`)
	f.Add(`[]`)
	f.Add(`{"linux":{"resources":{"hugepageLimits":[]}}}`)
	f.Add(`{"linux":{"resources":null}}`)
	f.Fuzz(func(t *testing.T, spec string) {
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = fitSpec(path, 0, false)
	})
}
