package fence

// Check refuses, having done nothing, the cgroup at dir when a task of its
// subtree is in uninterruptible sleep: the fence checks every pod's cgroup
// before it kills any.
func (k Killer) Check(dir string) error {
	pids, err := subtreePids(dir)
	if err != nil {
		return err
	}
	return k.refuseUninterruptible(dir, pids)
}
