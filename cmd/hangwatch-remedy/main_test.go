package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConfigCheckExitCodes(t *testing.T) {
	if code := execute([]string{"config", "check", "../../manifests/overlays/remedy/config.yaml"}); code != 0 {
		t.Errorf("the shipped policy: exit %d", code)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: hangwatch.io/v1alpha1\nkind: RemedyConfiguration\nmaxUnhealthy: lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := execute([]string{"config", "check", bad}); code != 2 {
		t.Errorf("a bad policy: exit %d, want 2", code)
	}
	if code := execute([]string{"run", "--leader-elect-lease-duration", "1s"}); code != 2 {
		t.Errorf("lease shorter than the renew deadline: exit %d, want 2", code)
	}
}
