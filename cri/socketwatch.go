package cri

import (
	"os"
	"sync"
	"syscall"
)

// socketWatch notices when a unix socket's path comes to name a different
// file: the runtime removed its socket and bound a new one.
type socketWatch struct {
	path string

	mu   sync.Mutex
	last fileID
}

type fileID struct{ dev, ino uint64 }

func newSocketWatch(path string) *socketWatch {
	w := &socketWatch{path: path}
	w.last, _ = statID(path)
	return w
}

// replaced reports whether the path names another file than at the last
// call. A missing socket is not a replacement; its return is.
func (w *socketWatch) replaced() bool {
	id, ok := statID(w.path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !ok {
		w.last = fileID{}
		return false
	}
	changed := id != w.last
	w.last = id
	return changed
}

func statID(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true //nolint:unconvert // Dev's type differs by platform
}
