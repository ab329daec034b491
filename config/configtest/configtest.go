// Package configtest writes hangwatch configuration files for tests.
package configtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Header is the apiVersion and kind every configuration file starts with.
const Header = "apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\n"

// Write writes Header and then body to config.yaml in a temp dir of t's,
// and returns its path.
func Write(t testing.TB, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(Header+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
