package httpauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// maxReviewBytes bounds a review answer: a user with many groups and
// extras is a few KiB.
const maxReviewBytes = 1 << 20

// User is who a token belongs to, as the TokenReview said.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string]authzv1.ExtraValue
}

// Reviewer asks the API server who a token is and what it may do.
type Reviewer interface {
	Authenticate(ctx context.Context, token string) (User, bool, error)
	Authorize(ctx context.Context, u User, a Attributes) (bool, string, error)
}

// APIReviewer posts TokenReviews and SubjectAccessReviews with the
// identity of cfg (the node's, or the DaemonSet's ServiceAccount).
type APIReviewer struct {
	client *http.Client
	base   *url.URL
}

// NewAPIReviewer returns a reviewer for the API server of cfg.
func NewAPIReviewer(cfg *rest.Config) (*APIReviewer, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("review client: %w", err)
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("review client: %w", err)
	}
	return &APIReviewer{client: client, base: base}, nil
}

// Authenticate asks a TokenReview about token.
func (r *APIReviewer) Authenticate(ctx context.Context, token string) (User, bool, error) {
	req := &authnv1.TokenReview{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"},
		Spec: authnv1.TokenReviewSpec{Token: token}}
	var resp authnv1.TokenReview
	if err := r.post(ctx, "/apis/authentication.k8s.io/v1/tokenreviews", req, &resp); err != nil {
		return User{}, false, err
	}
	if !resp.Status.Authenticated {
		return User{}, false, nil
	}
	u := resp.Status.User
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	return User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}, true, nil
}

// Authorize asks a SubjectAccessReview whether u may do a.
func (r *APIReviewer) Authorize(ctx context.Context, u User, a Attributes) (bool, string, error) {
	req := &authzv1.SubjectAccessReview{TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec: authzv1.SubjectAccessReviewSpec{User: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}}
	if a.Resource != nil {
		req.Spec.ResourceAttributes = a.Resource
	} else {
		req.Spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	}
	var resp authzv1.SubjectAccessReview
	if err := r.post(ctx, "/apis/authorization.k8s.io/v1/subjectaccessreviews", req, &resp); err != nil {
		return false, "", err
	}
	return resp.Status.Allowed && !resp.Status.Denied, resp.Status.Reason, nil
}

func (r *APIReviewer) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base.JoinPath(path).String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReviewBytes+1))
	if err != nil {
		return fmt.Errorf("POST %s: reading the answer: %w", path, err)
	}
	if len(data) > maxReviewBytes {
		return fmt.Errorf("POST %s: answer over %d bytes", path, maxReviewBytes)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(data[:min(len(data), 512)]))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: decoding the answer: %w", path, err)
	}
	return nil
}
