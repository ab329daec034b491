package podstarts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TaskDir is where containerd keeps a bundle directory for each task (a
// sandbox or container process) of the kubelet's namespace:
// <state>/io.containerd.runtime.v2.task/k8s.io/<ID>, made before the
// task's `runc create`. containerd sets a pod's network up (the CNI
// plugin's ADD) before it creates the sandbox container's task, except for
// a pod in a user namespace: while a pod waits for its sandbox and no task
// there is the runtime's unlisted sandbox, its network setup has not
// returned. CRI-O starts the sandbox container first and keeps no such
// directory: there the step stays "sandbox".
type TaskDir string

// DefaultContainerdState is containerd's default state directory.
const DefaultContainerdState = "/run/containerd"

// ContainerdTaskDir is the kubelet namespace's task directory under a
// containerd state directory; "" for "".
func ContainerdTaskDir(state string) TaskDir {
	if state == "" {
		return ""
	}
	return TaskDir(filepath.Join(state, "io.containerd.runtime.v2.task", "k8s.io"))
}

// ids are the tasks' IDs; known is false where there is no such directory
// (a CRI-O node, or containerd elsewhere) or it cannot be read.
func (d TaskDir) ids() (ids []string, known bool, err error) {
	if d == "" {
		return nil, false, nil
	}
	entries, err := os.ReadDir(string(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading containerd's task directory %s: %w", d, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, true, nil
}
