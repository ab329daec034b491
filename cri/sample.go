package cri

import "sort"

// object is what the sampler needs to know of a sandbox or container.
type object struct {
	id    string
	state int32
}

// sampler picks the objects whose status a cycle reads: every object when
// there are at most max, otherwise the ones whose state changed since the
// last cycle (those the kubelet's relist inspects) and then a rotating share
// of the rest, so that every object is read within a few cycles.
type sampler struct {
	last   map[string]int32
	cursor string
}

func newSampler() *sampler { return &sampler{} }

func (s *sampler) pick(objs []object, max int) []string {
	sort.Slice(objs, func(i, j int) bool { return objs[i].id < objs[j].id })
	changed := s.remember(objs)
	if len(objs) <= max {
		ids := make([]string, len(objs))
		for i, o := range objs {
			ids[i] = o.id
		}
		return ids
	}
	picked := make([]string, 0, max)
	chosen := map[string]bool{}
	for _, id := range changed {
		if len(picked) == max {
			break
		}
		picked = append(picked, id)
		chosen[id] = true
	}
	start := sort.Search(len(objs), func(i int) bool { return objs[i].id > s.cursor })
	for i := 0; i < len(objs) && len(picked) < max; i++ {
		o := objs[(start+i)%len(objs)]
		if chosen[o.id] {
			continue
		}
		picked = append(picked, o.id)
		s.cursor = o.id
	}
	return picked
}

// remember stores the current states and returns the IDs that are new or
// whose state changed, in ID order. On the first cycle nothing counts as
// changed: the rotation covers the objects that were already there.
func (s *sampler) remember(objs []object) []string {
	var changed []string
	first := s.last == nil
	next := make(map[string]int32, len(objs))
	for _, o := range objs {
		if prev, ok := s.last[o.id]; !first && (!ok || prev != o.state) {
			changed = append(changed, o.id)
		}
		next[o.id] = o.state
	}
	s.last = next
	return changed
}
