// Package httpauthtest is an API server for tests of a secure port: it
// answers TokenReviews and SubjectAccessReviews as its tokens say.
package httpauthtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
)

// APIServer authenticates each token of Tokens as the user it maps to,
// and allows a user only what Allowed says.
type APIServer struct {
	// Config reaches the server.
	Config *rest.Config
	// Reviews counts the reviews asked.
	Reviews atomic.Int64
	tokens  map[string]string
	allowed func(user string, a authzv1.SubjectAccessReviewSpec) bool
	srv     *httptest.Server
}

// NewAPIServer serves reviews until the test ends: tokens maps a token to
// its user, and allowed says what each user may do.
func NewAPIServer(t testing.TB, tokens map[string]string, allowed func(user string, a authzv1.SubjectAccessReviewSpec) bool) *APIServer {
	t.Helper()
	s := &APIServer{tokens: tokens, allowed: allowed}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", s.tokenReview)
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", s.accessReview)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	s.Config = &rest.Config{Host: s.srv.URL}
	return s
}

// Close stops the server and closes its connections; the test's end
// does, if nothing did before.
func (s *APIServer) Close() { s.srv.Close() }

func (s *APIServer) tokenReview(w http.ResponseWriter, r *http.Request) {
	s.Reviews.Add(1)
	var review authnv1.TokenReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if user, ok := s.tokens[review.Spec.Token]; ok {
		review.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: user}}
	}
	reply(w, &review)
}

func (s *APIServer) accessReview(w http.ResponseWriter, r *http.Request) {
	s.Reviews.Add(1)
	var review authzv1.SubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	review.Status.Allowed = s.allowed(review.Spec.User, review.Spec)
	reply(w, &review)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(v)
}
