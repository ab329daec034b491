module hangwatch.local/nhc

go 1.26.0

require github.com/medik8s/node-healthcheck-operator v0.12.0

// The module proxy refuses k8s.io/kube-aggregator v0.34.7, the version
// node-healthcheck-operator's dependencies ask for (403 "This module version
// is not available"; v0.34.6 too): the nearest older patch release it serves,
// whose API is the same, builds it with every other module at its own version.
replace k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.34.5
