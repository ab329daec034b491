package boundedfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadRefusesALargerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(path, 5); err != nil || string(b) != "12345" {
		t.Fatalf("5 bytes at most 5: %q %v", b, err)
	}
	if _, err := Read(path, 4); err == nil || !strings.Contains(err.Error(), "more than 4 bytes") {
		t.Fatalf("5 bytes at most 4: %v", err)
	}
}
