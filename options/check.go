package options

import (
	"github.com/hangwatch/hangwatch/config"
)

// Check is what the options built from c say is wrong, beyond config's
// own checks: the kubelet scraper's (its URL's scheme and host,
// credentials only over https, skipping TLS verification only on
// loopback). config.Loader runs it when given it.
func Check(c *config.Configuration) []error {
	if c.Kubelet.MetricsURL == "" || c.Kubelet.MetricsTimeout.Duration <= 0 {
		return nil
	}
	if err := Kubelet(c.Kubelet).Validate(); err != nil {
		return []error{err}
	}
	return nil
}
