package agent

import "github.com/hangwatch/hangwatch/kubeletmetrics"

// kubeletPuts follows the kubelet's PUTs to the API server (its Lease
// renewals) from scrape to scrape, to tell when they start failing: a
// kubelet that answers on its node but whose renewals do not land. Only
// the scraping goroutine uses it.
type kubeletPuts struct {
	seen    bool
	last    kubeletmetrics.Puts
	failing bool
}

// stopped takes a scrape's counts and says whether the PUTs just started
// failing: more failed since the last scrape and none that worked. It
// says so once per run of failing scrapes, so a kubelet that keeps
// failing (an API server down for the whole fleet) adds no more reads.
func (k *kubeletPuts) stopped(p kubeletmetrics.Puts) bool {
	if !p.Present {
		return false
	}
	last, seen := k.last, k.seen
	k.last, k.seen = p, true
	if !seen || p.OK < last.OK || p.Failed < last.Failed { // the first look, or a kubelet restarted
		k.failing = false
		return false
	}
	failing := p.Failed > last.Failed && p.OK == last.OK
	started := failing && !k.failing
	k.failing = failing
	return started
}
