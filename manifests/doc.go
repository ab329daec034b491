// Package manifests holds hangwatch's deployment manifests, Prometheus
// alerts and Grafana dashboard; its tests check them without a cluster
// (promtool rule tests, dashboard queries), and test/integration applies
// them to a real API server.
package manifests
