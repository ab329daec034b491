// Package scenarios holds the scenario bodies two suites share: the hang
// after a spell of slowness (test/integration's short trial, test/bench's
// measured one), the pod churn beside a healthy kubelet (test/integration,
// test/bench and test/e2e's healthy node) and the API server write budget
// (test/integration's check, test/bench's figures). The part drivers, the
// poller, ports and HTTP are test/harness's.
package scenarios
