package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/test/harness"
)

// waitAuthorized asks the API server, as the admin, whether user may do
// what review describes, until it says yes. A binding just created takes
// a moment to reach the API server's RBAC cache, and the first answer a
// component gets is cached: hangwatch and the kubelet keep a "no" for
// 30 s. So a test asks first, on the same cache, before the real request.
func waitAuthorized(t *testing.T, cp *harness.ControlPlane, user string, review authorizationv1.SubjectAccessReviewSpec) {
	t.Helper()
	review.User = user
	asked, _ := json.Marshal(review)
	var err error
	harness.Eventually(t, 30*time.Second, "the API server to allow "+string(asked), func() bool {
		var got *authorizationv1.SubjectAccessReview
		got, err = cp.Admin.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SubjectAccessReview{Spec: review}, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed
	}, harness.Explaining(func() string { return fmt.Sprintf("last error %v", err) }))
}

// serviceAccountUser is the user name the API server gives a
// ServiceAccount's tokens.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// nonResourceGet is a review of a GET on path.
func nonResourceGet(path string) authorizationv1.SubjectAccessReviewSpec {
	return authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"}}
}
