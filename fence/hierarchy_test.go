package fence

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDetectHierarchyV2(t *testing.T) {
	root := t.TempDir()
	statfs := func(path string, st *unix.Statfs_t) error {
		if path != root {
			t.Errorf("statfs %s, want %s", path, root)
		}
		st.Type = unix.CGROUP2_SUPER_MAGIC
		return nil
	}
	h, err := detectHierarchy(root, statfs)
	if err != nil || h != (Hierarchy{Root: root, V2: true}) {
		t.Fatalf("detectHierarchy = %+v, %v; want v2 at %s", h, err, root)
	}
}

func TestDetectHierarchyV1(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "freezer"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := DetectHierarchy(root)
	if err != nil || h != (Hierarchy{Root: root}) {
		t.Fatalf("DetectHierarchy = %+v, %v; want v1 at %s", h, err, root)
	}
}

func TestDetectHierarchyNone(t *testing.T) {
	root := t.TempDir()
	_, err := DetectHierarchy(root)
	if err == nil || !strings.Contains(err.Error(), "no cgroup control") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DetectHierarchy(empty dir) error = %v; want no cgroup control, not exist", err)
	}
	writeTestFile(t, filepath.Join(root, "freezer"), "")
	if _, err := DetectHierarchy(root); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("DetectHierarchy(freezer file) error = %v; want not a directory", err)
	}
	_, err = DetectHierarchy(filepath.Join(root, "missing"))
	if err == nil || !strings.Contains(err.Error(), "statfs") {
		t.Fatalf("DetectHierarchy(missing) error = %v; want statfs error", err)
	}
}
