package nhc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// What the controller's kustomization (config/default) does to its RBAC:
// names prefixed, and manager-role labelled for the aggregated role that
// gathers the remediators' rules.
const (
	nhcRBACPrefix     = "node-healthcheck-"
	nhcAggregateLabel = "rbac.ext-remediation/aggregate-to-ext-remediation"
)

// installNHCRBAC applies the controller's shipped RBAC (config/rbac) as its
// kustomization does (config/default: namePrefix node-healthcheck-, the
// deployment's namespace, manager-role labelled for aggregation), bound to
// its ServiceAccount, and the ClusterRole a remediator ships for it: Self
// Node Remediation's kinds, labelled for NodeHealthCheck's aggregated role.
func installNHCRBAC(t *testing.T, cp *harness.ControlPlane, nhc Operator) {
	t.Helper()
	if err := installNHCClusterRBAC(cp, nhc); err != nil {
		t.Fatal(err)
	}
	if err := installNHCLeaderElectionRBAC(cp, nhc); err != nil {
		t.Fatal(err)
	}
	remediator := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "self-node-remediation-ext-remediation", Labels: map[string]string{nhcAggregateLabel: "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{SelfNodeRemediationGVR.Group},
			Resources: []string{SelfNodeRemediationGVR.Resource, SelfNodeRemediationTemplateGVR.Resource},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	}
	if _, err := cp.Admin.RbacV1().ClusterRoles().Create(context.Background(), remediator, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// installNHCClusterRBAC creates the manager's and the metrics' ClusterRoles
// and their bindings.
func installNHCClusterRBAC(cp *harness.ControlPlane, nhc Operator) error {
	ctx := context.Background()
	for _, file := range []string{"role.yaml", "metrics_auth_role.yaml"} {
		var r rbacv1.ClusterRole
		if err := readNHCRBAC(nhc, file, &r); err != nil {
			return err
		}
		if r.Name == "manager-role" { // config/default/manager_role_patch.yaml
			r.Labels = map[string]string{nhcAggregateLabel: "true"}
		}
		r.Name = nhcRBACPrefix + r.Name
		if _, err := cp.Admin.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, file := range []string{"role_binding.yaml", "metrics_auth_role_binding.yaml"} {
		var b rbacv1.ClusterRoleBinding
		if err := readNHCRBAC(nhc, file, &b); err != nil {
			return err
		}
		b.Name, b.RoleRef.Name = nhcRBACPrefix+b.Name, nhcRBACPrefix+b.RoleRef.Name
		prefixServiceAccounts(b.Subjects)
		if _, err := cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// installNHCLeaderElectionRBAC creates the leader election Role and its
// binding in Namespace.
func installNHCLeaderElectionRBAC(cp *harness.ControlPlane, nhc Operator) error {
	ctx := context.Background()
	var r rbacv1.Role
	if err := readNHCRBAC(nhc, "leader_election_role.yaml", &r); err != nil {
		return err
	}
	r.Name, r.Namespace = nhcRBACPrefix+r.Name, Namespace
	if _, err := cp.Admin.RbacV1().Roles(Namespace).Create(ctx, &r, metav1.CreateOptions{}); err != nil {
		return err
	}
	var b rbacv1.RoleBinding
	if err := readNHCRBAC(nhc, "leader_election_role_binding.yaml", &b); err != nil {
		return err
	}
	b.Name, b.Namespace, b.RoleRef.Name = nhcRBACPrefix+b.Name, Namespace, nhcRBACPrefix+b.RoleRef.Name
	prefixServiceAccounts(b.Subjects)
	_, err := cp.Admin.RbacV1().RoleBindings(Namespace).Create(ctx, &b, metav1.CreateOptions{})
	return err
}

// prefixServiceAccounts names the ServiceAccount subjects as the
// kustomization does: prefixed, in Namespace.
func prefixServiceAccounts(ss []rbacv1.Subject) {
	for i := range ss {
		if ss[i].Kind == rbacv1.ServiceAccountKind {
			ss[i].Name, ss[i].Namespace = nhcRBACPrefix+ss[i].Name, Namespace
		}
	}
}

// readNHCRBAC reads file of the module's config/rbac into into.
func readNHCRBAC(nhc Operator, file string, into any) error {
	raw, err := os.ReadFile(filepath.Join(nhc.RBACDir, file))
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
