package config

import "github.com/hangwatch/hangwatch/observations"

// RuleParams are the knobs the rules read as params: kubeletUnresponsive.share
// and pleg.slowFor. A rule of the file's own reads them or not, as it says.
func (c *Configuration) RuleParams() observations.Params {
	return observations.Params{LeaseGraceShare: c.KubeletUnresponsive.Share, PLEGSlowFor: c.PLEG.SlowFor.Duration}
}
