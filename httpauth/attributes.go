package httpauth

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
)

// Attributes are what a request is checked for: get on its non-resource
// URL (as Prometheus' `nonResourceURLs: ["/metrics"]` rules expect), or,
// when Resource is set, that resource instead (the kubelet checks
// nodes/metrics, nodes/proxy and so on for its own port).
type Attributes struct {
	Path     string
	Verb     string
	Resource *authzv1.ResourceAttributes
}

// AttributesFor says what a request is checked for.
type AttributesFor func(r *http.Request) Attributes

var resourceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ParseResource reads --authorization-resource: empty for the non-resource
// URL of each path, else RESOURCE[.GROUP][/SUBRESOURCE] (for example
// nodes/metrics), checked with verb get on the object named name.
func ParseResource(spec, name string) (AttributesFor, error) {
	if spec == "" {
		return func(r *http.Request) Attributes { return Attributes{Path: r.URL.Path, Verb: "get"} }, nil
	}
	resource, sub, hasSub := strings.Cut(spec, "/")
	resource, group, _ := strings.Cut(resource, ".")
	if !resourceName.MatchString(resource) || (hasSub && !resourceName.MatchString(sub)) {
		return nil, fmt.Errorf("--authorization-resource %q: want RESOURCE[.GROUP][/SUBRESOURCE] in lower case, such as nodes/metrics", spec)
	}
	attrs := authzv1.ResourceAttributes{Verb: "get", Group: group, Resource: resource, Subresource: sub, Name: name}
	return func(r *http.Request) Attributes {
		a := attrs
		return Attributes{Path: r.URL.Path, Verb: "get", Resource: &a}
	}, nil
}

// key says what a cached decision is about.
func (a Attributes) key() string {
	if a.Resource == nil {
		return a.Verb + " " + a.Path
	}
	r := a.Resource
	return strings.Join([]string{r.Verb, r.Group, r.Resource, r.Subresource, r.Namespace, r.Name}, "|")
}
