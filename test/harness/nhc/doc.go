// Package nhc runs medik8s' NodeHealthCheck controller, as the setup
// command built it (node-healthcheck-operator with its CRDs, RBAC and
// webhook configuration), against a harness control plane, with the
// remediation CRDs it reads and a log of the remediations it creates. It
// is a part of the harness of its own: it uses test/harness's control
// plane, processes and poller, and nothing of the harness uses it.
package nhc
