// Package httpauth guards hangwatch's secure port the way the kubelet
// guards its own (and kube-rbac-proxy a workload's): TLS from files or a
// self-signed certificate made in memory, a bearer token checked with a
// TokenReview, then the request checked with a SubjectAccessReview, both
// answered by the API server and cached for a short time. Reviews the
// cache cannot answer are asked within a budget (global and per client
// address; past it, 429), and the listener limits connections by
// address (SecureServer), so no one caller can flood the API server or
// hold the port.
package httpauth
