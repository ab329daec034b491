// Package httpauth guards hangwatch's secure port the way the kubelet
// guards its own (and kube-rbac-proxy a workload's): TLS from files or a
// self-signed certificate made in memory, a bearer token checked with a
// TokenReview, then the request checked with a SubjectAccessReview, both
// answered by the API server and cached for a short time.
package httpauth
