package kubeletmetrics

import "strings"

// restClientFamily counts the kubelet's requests to the API server by
// method, host and code (client-go's rest_client_requests_total).
const restClientFamily = "rest_client_requests_total"

// Puts are the kubelet's PUT requests to the API server by outcome, so
// far: its node Lease renewals are its PUTs (its node and pod statuses are
// PATCHes). Failed counts every answer but 2xx, and requests that got no
// answer (code "<error>"). A kubelet whose renewals stop landing while it
// answers on its node shows here first, at no cost to the API server.
type Puts struct {
	Present    bool
	OK, Failed float64
}

func readPuts(fams map[string]*family) Puts {
	f := fams[restClientFamily]
	if f == nil {
		return Puts{}
	}
	p := Puts{Present: true}
	for _, m := range f.Metric {
		if label(m, "method") != "PUT" {
			continue
		}
		if strings.HasPrefix(label(m, "code"), "2") {
			p.OK += scalar(m)
		} else {
			p.Failed += scalar(m)
		}
	}
	return p
}
