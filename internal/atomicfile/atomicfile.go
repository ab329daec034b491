// Package atomicfile replaces a file whole: a reader sees the old content
// or the new, never a part, across a crash or a power loss.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes raw to a temporary file beside path, syncs it, and renames
// it over path. The temporary file is removed whatever fails.
func Write(path string, raw []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(raw); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
