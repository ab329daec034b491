package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// UninstallFinalizer holds the install's Deployment (and its pods, which
// the garbage collector deletes only once it is gone) and the uninstall
// guard, a Lease, while an uninstall takes hangwatch's marks off the
// Nodes.
const UninstallFinalizer = "hangwatch.io/uninstall"

// How the install is held while its Nodes are cleaned. An uninstall
// deletes everything at once, the RBAC before the Deployment (kustomize's
// order), and RBAC needs both a ClusterRole and its binding: remedy
// cannot hold them with a finalizer of its own, since taking it off the
// first would leave it unable to take it off the second. So the
// ServiceAccount, the ClusterRole and the ClusterRoleBinding carry the
// garbage collector's foregroundDeletion finalizer, which the collector
// takes off only once the object's blocking dependents are gone; each has
// one dependent, a guard Lease of its own (a dependent with another owner
// still there would only lose its reference), which remedy holds with
// UninstallFinalizer and lets go last. The Deployment, held with
// UninstallFinalizer too, is let go just before.

// heldObject is one object of the install.
type heldObject struct {
	what      string // kind/namespace/name, for the log
	kind      string // lower case: the guard's name's end
	finalizer string
	ref       func(metav1.Object) metav1.OwnerReference // the guard's reference to it; nil: none
	get       func(context.Context) (metav1.Object, error)
	patch     func(context.Context, []byte) error
}

// heldObjects are the install's objects named name: the ServiceAccount,
// the ClusterRoleBinding and the ClusterRole, owners of the guard, and
// last the Deployment, whose deletion starts the uninstall.
func heldObjects(c kubernetes.Interface, namespace, name string) []heldObject {
	sa, crb, cr, d := c.CoreV1().ServiceAccounts(namespace), c.RbacV1().ClusterRoleBindings(), c.RbacV1().ClusterRoles(), c.AppsV1().Deployments(namespace)
	owner := func(apiVersion, kind string) func(metav1.Object) metav1.OwnerReference {
		return func(o metav1.Object) metav1.OwnerReference {
			return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(), BlockOwnerDeletion: ptr.To(true)}
		}
	}
	return []heldObject{
		{what: "serviceaccount/" + namespace + "/" + name, kind: "serviceaccount", finalizer: metav1.FinalizerDeleteDependents, ref: owner("v1", "ServiceAccount"),
			get: func(ctx context.Context) (metav1.Object, error) { return sa.Get(ctx, name, metav1.GetOptions{}) },
			patch: func(ctx context.Context, p []byte) error {
				_, err := sa.Patch(ctx, name, types.JSONPatchType, p, uninstallPatch)
				return err
			}},
		{what: "clusterrolebinding/" + name, kind: "clusterrolebinding", finalizer: metav1.FinalizerDeleteDependents, ref: owner("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
			get: func(ctx context.Context) (metav1.Object, error) { return crb.Get(ctx, name, metav1.GetOptions{}) },
			patch: func(ctx context.Context, p []byte) error {
				_, err := crb.Patch(ctx, name, types.JSONPatchType, p, uninstallPatch)
				return err
			}},
		{what: "clusterrole/" + name, kind: "clusterrole", finalizer: metav1.FinalizerDeleteDependents, ref: owner("rbac.authorization.k8s.io/v1", "ClusterRole"),
			get: func(ctx context.Context) (metav1.Object, error) { return cr.Get(ctx, name, metav1.GetOptions{}) },
			patch: func(ctx context.Context, p []byte) error {
				_, err := cr.Patch(ctx, name, types.JSONPatchType, p, uninstallPatch)
				return err
			}},
		{what: "deployment/" + namespace + "/" + name, kind: "deployment", finalizer: UninstallFinalizer,
			get: func(ctx context.Context) (metav1.Object, error) { return d.Get(ctx, name, metav1.GetOptions{}) },
			patch: func(ctx context.Context, p []byte) error {
				_, err := d.Patch(ctx, name, types.JSONPatchType, p, uninstallPatch)
				return err
			}},
	}
}

// guardName is the name of the guard Lease of the install's object of
// kind.
func guardName(install, kind string) string { return install + "-uninstall-" + kind }

// hold adds h's finalizer to o unless it has it, or o is being deleted
// (the API server refuses a new finalizer then); it returns o.
func (h heldObject) hold(ctx context.Context) (metav1.Object, error) {
	return h.setFinalizer(ctx, true)
}

// release takes h's finalizer off o, if it has it.
func (h heldObject) release(ctx context.Context) error {
	_, err := h.setFinalizer(ctx, false)
	return err
}

func (h heldObject) setFinalizer(ctx context.Context, on bool) (metav1.Object, error) {
	o, err := h.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.what, err)
	}
	has := slices.Contains(o.GetFinalizers(), h.finalizer)
	if has == on || (on && o.GetDeletionTimestamp() != nil) {
		return o, nil
	}
	fin := slices.DeleteFunc(slices.Clone(o.GetFinalizers()), func(f string) bool { return f == h.finalizer })
	if on {
		fin = append(fin, h.finalizer)
	}
	if err := h.patch(ctx, finalizersPatch(o, fin)); err != nil {
		return nil, fmt.Errorf("%s finalizer %s on %s: %w", map[bool]string{true: "add", false: "remove"}[on], h.finalizer, h.what, err)
	}
	return o, nil
}

// finalizersPatch sets o's finalizers to fin, if o is still the object
// just read.
func finalizersPatch(o metav1.Object, fin []string) []byte {
	ops := []map[string]any{{"op": "add", "path": "/metadata/finalizers", "value": fin}}
	if rv := o.GetResourceVersion(); rv != "" { // always, but on a fake Clientset
		ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": rv}}, ops...)
	}
	p, _ := json.Marshal(ops) // strings only: cannot fail
	return p
}

// ensureGuard makes a guard Lease, name, owned by owner (blocking its
// deletion) and held with UninstallFinalizer, or brings one made before
// to that.
func ensureGuard(ctx context.Context, c kubernetes.Interface, namespace, name string, owner metav1.OwnerReference) error {
	leases := c.CoordinationV1().Leases(namespace)
	owners := []metav1.OwnerReference{owner}
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			OwnerReferences: owners, Finalizers: []string{UninstallFinalizer},
			Labels: map[string]string{"app.kubernetes.io/name": "hangwatch-remedy"}}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create the uninstall guard, lease %s/%s: %w", namespace, name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the uninstall guard, lease %s/%s: %w", namespace, name, err)
	}
	if l.DeletionTimestamp != nil || (slices.Contains(l.Finalizers, UninstallFinalizer) && slices.EqualFunc(l.OwnerReferences, owners, sameOwner)) {
		return nil
	}
	var ops []map[string]any
	if l.ResourceVersion != "" { // always, but on a fake Clientset
		ops = append(ops, map[string]any{"op": "test", "path": "/metadata/resourceVersion", "value": l.ResourceVersion})
	}
	ops = append(ops, map[string]any{"op": "add", "path": "/metadata/ownerReferences", "value": owners},
		map[string]any{"op": "add", "path": "/metadata/finalizers", "value": append(slices.DeleteFunc(slices.Clone(l.Finalizers),
			func(f string) bool { return f == UninstallFinalizer }), UninstallFinalizer)})
	p, _ := json.Marshal(ops) // plain values only: cannot fail
	if _, err := leases.Patch(ctx, name, types.JSONPatchType, p, uninstallPatch); err != nil {
		return fmt.Errorf("update the uninstall guard, lease %s/%s: %w", namespace, name, err)
	}
	return nil
}

func sameOwner(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.Kind == b.Kind && a.Name == b.Name
}

// releaseGuard lets a guard Lease, name, go: the garbage collector then
// lets its owner go.
func releaseGuard(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	leases := c.CoordinationV1().Leases(namespace)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the uninstall guard, lease %s/%s: %w", namespace, name, err)
	}
	if !slices.Contains(l.Finalizers, UninstallFinalizer) {
		return nil
	}
	fin := slices.DeleteFunc(slices.Clone(l.Finalizers), func(f string) bool { return f == UninstallFinalizer })
	if _, err := leases.Patch(ctx, name, types.JSONPatchType, finalizersPatch(l, fin), uninstallPatch); err != nil {
		return fmt.Errorf("let the uninstall guard go, lease %s/%s: %w", namespace, name, err)
	}
	return nil
}
