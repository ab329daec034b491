// Package alerting runs what an operator alerts with, as the setup command
// built them: Prometheus (scraping the targets a test names, as the
// shipped PodMonitor would, and evaluating the shipped rules),
// Alertmanager with a receiver that records each notification, and the
// shipped dashboard read back. It is a part of the harness of its own: it
// uses test/harness's processes, ports and poller, and nothing of the
// harness uses it.
package alerting
