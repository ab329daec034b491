// Package apiclient is the few calls hangwatch makes to the API server, over
// client-go's rest client with a scheme of only the types it uses (Node,
// Event, Lease). It links no Clientset: no other API group, no typed
// clients, no apply configurations.
package apiclient

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Client reaches the core and coordination groups with one rate limit.
type Client struct {
	core         rest.Interface
	coordination rest.Interface
}

// scheme holds only the types hangwatch sends and reads.
var scheme = runtime.NewScheme()

func init() {
	adders := []func(*runtime.Scheme) error{corev1.AddToScheme, coordinationv1.AddToScheme}
	for _, add := range adders {
		if err := add(scheme); err != nil {
			panic(err) // a static registration; it cannot fail at run time
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
}

// New returns a client for cfg; its QPS and Burst are shared by both groups.
func New(cfg *rest.Config) (*Client, error) {
	base := rest.CopyConfig(cfg)
	if base.RateLimiter == nil && base.QPS > 0 {
		base.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(base.QPS, base.Burst)
	}
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	core, err := groupClient(base, "/api", corev1.SchemeGroupVersion, codecs)
	if err != nil {
		return nil, err
	}
	coordination, err := groupClient(base, "/apis", coordinationv1.SchemeGroupVersion, codecs)
	if err != nil {
		return nil, err
	}
	return &Client{core: core, coordination: coordination}, nil
}

func groupClient(base *rest.Config, path string, gv schema.GroupVersion, codecs runtime.NegotiatedSerializer) (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(base)
	cfg.APIPath, cfg.GroupVersion, cfg.NegotiatedSerializer = path, &gv, codecs
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client for %s: %w", gv, err)
	}
	return c, nil
}

// GetNode reads the Node (with its managedFields).
func (c *Client) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := c.core.Get().Resource("nodes").Name(name).Do(ctx).Into(out)
	return out, err
}

// PatchNodeStatus patches nodes/<name>/status as fieldManager.
func (c *Client) PatchNodeStatus(ctx context.Context, name string, pt types.PatchType, body []byte, fieldManager string) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := c.core.Patch(pt).Resource("nodes").Name(name).SubResource("status").
		VersionedParams(&metav1.PatchOptions{FieldManager: fieldManager}, metav1.ParameterCodec).
		Body(body).Do(ctx).Into(out)
	return out, err
}

// PatchNode patches the Node itself (its annotations: the fence's
// attestation).
func (c *Client) PatchNode(ctx context.Context, name string, pt types.PatchType, body []byte) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := c.core.Patch(pt).Resource("nodes").Name(name).Body(body).Do(ctx).Into(out)
	return out, err
}

// PodsOnNode lists the pods bound to node.
func (c *Client) PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error) {
	out := &corev1.PodList{}
	err := c.core.Get().Resource("pods").
		VersionedParams(&metav1.ListOptions{FieldSelector: "spec.nodeName=" + node}, metav1.ParameterCodec).
		Do(ctx).Into(out)
	return out.Items, err
}

// DeletePodNow deletes a pod with grace 0, only if it is still the pod of
// uid.
func (c *Client) DeletePodNow(ctx context.Context, namespace, name, uid string) error {
	zero, u := int64(0), types.UID(uid)
	return c.core.Delete().Namespace(namespace).Resource("pods").Name(name).
		Body(&metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &u}}).Do(ctx).Error()
}

// GetLease reads a Lease; resourceVersion "0" is served from the watch cache.
func (c *Client) GetLease(ctx context.Context, namespace, name, resourceVersion string) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coordination.Get().Namespace(namespace).Resource("leases").Name(name).
		VersionedParams(&metav1.GetOptions{ResourceVersion: resourceVersion}, metav1.ParameterCodec).
		Do(ctx).Into(out)
	return out, err
}

// CreateLease creates a Lease in its namespace.
func (c *Client) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coordination.Post().Namespace(l.Namespace).Resource("leases").Body(l).Do(ctx).Into(out)
	return out, err
}

// UpdateLease replaces a Lease; its resourceVersion makes it fail with a
// conflict when the Lease changed since it was read.
func (c *Client) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coordination.Put().Namespace(l.Namespace).Resource("leases").Name(l.Name).Body(l).Do(ctx).Into(out)
	return out, err
}

// CreateEvent creates a core/v1 Event in its namespace.
func (c *Client) CreateEvent(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := c.core.Post().Namespace(ev.Namespace).Resource("events").Body(ev).Do(ctx).Into(out)
	return out, err
}

// PatchEvent applies a strategic-merge patch to an Event (a repeat's count).
func (c *Client) PatchEvent(ctx context.Context, namespace, name string, body []byte) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := c.core.Patch(types.StrategicMergePatchType).Namespace(namespace).Resource("events").Name(name).
		Body(body).Do(ctx).Into(out)
	return out, err
}

// ServerVersion reads /version.
func (c *Client) ServerVersion(ctx context.Context) ([]byte, error) {
	return c.core.Get().AbsPath("/version").Do(ctx).Raw()
}
