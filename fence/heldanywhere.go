package fence

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// HeldAnywhere reads the mount table of every mount namespace on the node
// (once per namespace, as HeldElsewhere does: pids that vanish are
// skipped, one whose table cannot be read is an error) and returns
// "pid <n>: <mountpoint> (<fstype> <device or source>)" for every mount of
// one of rec's Identities, wherever it is mounted: a namespace that holds
// the volume at /data (an operator's nsenter shell, a backup agent that
// joined the container's namespace) is found as surely as one that holds
// it under the kubelet's directories. Empty means nothing on the node
// mounts the volumes any more. Call it after the release.
//
// A mount namespace kept alive by a bind mount of its nsfs file
// (/proc/<pid>/ns/mnt bound somewhere) with no process left in it has no
// /proc/<pid>/mountinfo to read; such a pin seen in any table, of a
// namespace no process showed, makes the proof incomplete: ErrImpossible.
//
// The tables are read in a goroutine: a read that blocks in the kernel
// (mountinfo waits for the namespace's lock, which a stuck unmount may
// hold) ends HeldAnywhere when ctx ends, with ErrImpossible if its
// deadline passed, and that goroutine returns when the read does.
func (m Mounts) HeldAnywhere(ctx context.Context, rec VolumeRecord) ([]string, error) {
	if len(rec.Identities) == 0 {
		return nil, nil
	}
	type result struct {
		held []string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		held, err := m.heldAnywhere(ctx, rec.Identities)
		done <- result{held, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("mount namespaces holding pod %s's volumes: %w", rec.Pod, r.err)
		}
		return r.held, nil
	case <-ctx.Done():
		return nil, ctxFailure(ctx, "read every mount namespace for pod "+rec.Pod+"'s volumes")
	}
}

// heldAnywhere is HeldAnywhere's scan.
func (m Mounts) heldAnywhere(ctx context.Context, ids []VolumeIdentity) ([]string, error) {
	var found []heldMount
	pins := map[string]string{} // pinned namespace -> where
	namedBy := map[int]string{} // mount ID -> the named namespace that showed it
	seen, err := m.eachNamespace(ctx, func(pid int, ns string, entries []mountEntry) {
		for _, e := range entries {
			if e.FSType == "nsfs" && strings.HasPrefix(e.Root, "mnt:[") {
				pins[e.Root] = fmt.Sprintf("pid %d: %s", pid, e.MountPoint)
			}
			if i := slices.IndexFunc(ids, func(id VolumeIdentity) bool { return id.matches(e) }); i >= 0 {
				found = append(found, heldMount{pid, ns, e, ids[i]})
				if ns != "" {
					namedBy[e.ID] = ns
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	var held []string
	for _, h := range found {
		ns := h.ns
		if ns == "" {
			ns = namedBy[h.e.ID] // a mount ID is one mount, of one namespace
		}
		pids := append([]int{h.pid}, seen[ns]...)
		if !m.anotherSuperblock(pids, h.e, h.id) {
			held = append(held, fmt.Sprintf("pid %d: %s (%s)", h.pid, h.e.MountPoint, describeMount(h.e, h.id)))
		}
	}
	for ns, at := range pins {
		if len(seen[ns]) == 0 {
			return held, fmt.Errorf("mount namespace %s is pinned at %s with no process in it, so its mounts cannot be read: %w", ns, at, ErrImpossible)
		}
	}
	return held, nil
}

// heldMount is a mount of id that pid's namespace ns shows.
type heldMount struct {
	pid int
	ns  string
	e   mountEntry
	id  VolumeIdentity
}

// describeMount is "<fstype> <major:minor>" of e or, when id is a source
// identity, "<fstype> <source>".
func describeMount(e mountEntry, id VolumeIdentity) string {
	if id.Source != "" {
		return e.FSType + " " + e.Source
	}
	return fmt.Sprintf("%s %d:%d", e.FSType, e.Major, e.Minor)
}
