package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// The identities tests act as on the control plane: kubectl as the
// admin, ServiceAccounts with rights of their own and their tokens, and
// clients from a kubeconfig or a token.

// Kubectl runs the real kubectl built by the setup command as the admin and
// returns its output, failing t when it fails.
func (cp *ControlPlane) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := cp.kubectl(args...)
	// Tests side by side on the shared API server apply the same shipped
	// objects: an apply that found none and then lost the create to the
	// other is applied again, and patches what is there.
	for i := 0; err != nil && len(args) > 0 && args[0] == "apply" && strings.Contains(out, "AlreadyExists") && i < 3; i++ {
		out, err = cp.kubectl(args...)
	}
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// KubectlLog is kubectl's output as the admin, errors included, for a
// failure's log.
func (cp *ControlPlane) KubectlLog(args ...string) string {
	out, err := cp.kubectl(args...)
	if err != nil {
		return fmt.Sprintf("%s(kubectl: %v)", out, err)
	}
	return out
}

func (cp *ControlPlane) kubectl(args ...string) (string, error) {
	bin, err := KubeBinary("kubectl")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(bin, append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// Token returns a token, valid an hour, of ServiceAccount ns/sa; bound to
// pod when pod is not nil.
func (cp *ControlPlane) Token(t testing.TB, ns, sa string, pod *corev1.Pod) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tok, err := cp.Admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", ns, sa, err)
	}
	return tok.Status.Token
}

// ServiceAccountToken creates ServiceAccount default/name, grants it rules
// through a ClusterRole and binding of its name (none without rules),
// waits until the API server authorizes each, and returns a token of it.
func (cp *ControlPlane) ServiceAccountToken(t testing.TB, name string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Admin.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(rules) > 0 {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		if _, err := cp.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}}}
		if _, err := cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, review := range reviewsOf(rules) {
		cp.WaitAuthorized(t, ServiceAccountUser("default", name), review)
	}
	return cp.Token(t, "default", name, nil)
}

// reviewsOf is a review for each thing rules allow.
func reviewsOf(rules []rbacv1.PolicyRule) []authorizationv1.SubjectAccessReviewSpec {
	var out []authorizationv1.SubjectAccessReviewSpec
	for _, r := range rules {
		for _, verb := range r.Verbs {
			for _, path := range r.NonResourceURLs {
				out = append(out, authorizationv1.SubjectAccessReviewSpec{
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb}})
			}
			for _, group := range r.APIGroups {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					out = append(out, authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
						Verb: verb, Group: group, Resource: resource, Subresource: sub}})
				}
			}
		}
	}
	return out
}

// WaitAuthorized asks the API server, as the admin, whether user may do
// what review describes, until it says yes. A binding just created takes
// a moment to reach the API server's RBAC cache, and the first answer a
// component gets is cached: hangwatch and the kubelet keep a "no" for
// 30 s. So a test asks first, on the same cache, before the real request.
func (cp *ControlPlane) WaitAuthorized(t testing.TB, user string, review authorizationv1.SubjectAccessReviewSpec) {
	t.Helper()
	review.User = user
	asked, _ := json.Marshal(review)
	var err error
	Eventually(t, 30*time.Second, "the API server to allow "+string(asked), func() bool {
		var got *authorizationv1.SubjectAccessReview
		got, err = cp.Admin.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SubjectAccessReview{Spec: review}, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed
	}, Explaining(func() string { return fmt.Sprintf("last error %v", err) }))
}

// ServiceAccountUser is the user name the API server gives a
// ServiceAccount's tokens.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// NonResourceGet is a review of a GET on path.
func NonResourceGet(path string) authorizationv1.SubjectAccessReviewSpec {
	return authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"}}
}

// TokenFile writes token to a file of t's and returns its path.
func TokenFile(t testing.TB, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TokenKubeconfig writes a kubeconfig for the API server with a bearer
// token, as a pod's in-cluster config has it.
func (cp *ControlPlane) TokenKubeconfig(t testing.TB, token string) string {
	t.Helper()
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: sa, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: sa}}]
current-context: test
`, cp.URL, cp.PKI.CAFile, token)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TokenClient is a client of the API server with a bearer token.
func (cp *ControlPlane) TokenClient(t testing.TB, token string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: cp.URL, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: cp.PKI.CAFile}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ClientFor is a client of the API server with kubeconfig's identity.
func ClientFor(t testing.TB, kubeconfig string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(restConfigFor(t, kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// DynamicClientFor is a dynamic client of the API server (for custom
// resources) with kubeconfig's identity.
func DynamicClientFor(t testing.TB, kubeconfig string) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(restConfigFor(t, kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restConfigFor is the client configuration of kubeconfig.
func restConfigFor(t testing.TB, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
