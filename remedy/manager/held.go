package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// UninstallFinalizer holds the install's objects (its Deployment, its
// ServiceAccount, its ClusterRole and ClusterRoleBinding) while an
// uninstall takes hangwatch's marks off the Nodes: without it, the
// ServiceAccount's token and the RBAC that lets the controller write
// would be gone before it starts.
const UninstallFinalizer = "hangwatch.io/uninstall"

// heldObject is one object of the install the finalizer holds.
type heldObject struct {
	what  string // kind/namespace/name, for the log
	get   func(context.Context) (metav1.Object, error)
	patch func(context.Context, []byte) error
}

// heldObjects are the install's objects named name: the ServiceAccount,
// the ClusterRoleBinding, the ClusterRole, and last the Deployment (whose
// deletion starts the uninstall, and which goes last: gone, the
// uninstall is done).
func heldObjects(c kubernetes.Interface, namespace, name string) []heldObject {
	po := uninstallPatch
	go_ := metav1.GetOptions{}
	sa, crb, cr, d := c.CoreV1().ServiceAccounts(namespace), c.RbacV1().ClusterRoleBindings(), c.RbacV1().ClusterRoles(), c.AppsV1().Deployments(namespace)
	return []heldObject{
		{what: "serviceaccount/" + namespace + "/" + name,
			get: func(ctx context.Context) (metav1.Object, error) { return sa.Get(ctx, name, go_) },
			patch: func(ctx context.Context, p []byte) error {
				_, err := sa.Patch(ctx, name, types.JSONPatchType, p, po)
				return err
			}},
		{what: "clusterrolebinding/" + name,
			get: func(ctx context.Context) (metav1.Object, error) { return crb.Get(ctx, name, go_) },
			patch: func(ctx context.Context, p []byte) error {
				_, err := crb.Patch(ctx, name, types.JSONPatchType, p, po)
				return err
			}},
		{what: "clusterrole/" + name,
			get: func(ctx context.Context) (metav1.Object, error) { return cr.Get(ctx, name, go_) },
			patch: func(ctx context.Context, p []byte) error {
				_, err := cr.Patch(ctx, name, types.JSONPatchType, p, po)
				return err
			}},
		{what: "deployment/" + namespace + "/" + name,
			get: func(ctx context.Context) (metav1.Object, error) { return d.Get(ctx, name, go_) },
			patch: func(ctx context.Context, p []byte) error {
				_, err := d.Patch(ctx, name, types.JSONPatchType, p, po)
				return err
			}},
	}
}

// hold adds the finalizer to o unless it has it, or o is being deleted
// (the API server refuses a new finalizer then).
func (h heldObject) hold(ctx context.Context) error {
	return h.setFinalizer(ctx, true)
}

// release takes the finalizer off o, if it has it.
func (h heldObject) release(ctx context.Context) error {
	return h.setFinalizer(ctx, false)
}

func (h heldObject) setFinalizer(ctx context.Context, on bool) error {
	o, err := h.get(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", h.what, err)
	}
	has := slices.Contains(o.GetFinalizers(), UninstallFinalizer)
	if has == on || (on && o.GetDeletionTimestamp() != nil) {
		return nil
	}
	fin := slices.DeleteFunc(slices.Clone(o.GetFinalizers()), func(f string) bool { return f == UninstallFinalizer })
	if on {
		fin = append(fin, UninstallFinalizer)
	}
	ops := []map[string]any{{"op": "add", "path": "/metadata/finalizers", "value": fin}}
	if rv := o.GetResourceVersion(); rv != "" { // always, but on a fake Clientset
		ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": rv}}, ops...)
	}
	p, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := h.patch(ctx, p); err != nil {
		return fmt.Errorf("%s finalizer %s on %s: %w", map[bool]string{true: "add", false: "remove"}[on], UninstallFinalizer, h.what, err)
	}
	return nil
}
