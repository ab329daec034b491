package httpauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

// fakeReviewer knows tokens by user and lets users get paths.
type fakeReviewer struct {
	mu      sync.Mutex
	tokens  map[string]string
	rights  map[string]bool // user + " " + attributes key
	err     error
	reviews int
	asked   map[string]int // TokenReviews by token
}

func (f *fakeReviewer) Authenticate(_ context.Context, token string) (User, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reviews++
	f.asked[token]++
	if f.err != nil {
		return User{}, false, f.err
	}
	name, ok := f.tokens[token]
	return User{Name: name}, ok, nil
}

func (f *fakeReviewer) Authorize(_ context.Context, u User, a Attributes) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reviews++
	if f.err != nil {
		return false, "", f.err
	}
	if f.rights[u.Name+" "+a.key()] {
		return true, "", nil
	}
	return false, "no RBAC rule", nil
}

func newFakeReviewer() *fakeReviewer {
	return &fakeReviewer{tokens: map[string]string{"good": "prometheus", "weak": "nobody"},
		rights: map[string]bool{"prometheus get /metrics": true, "prometheus get||nodes|metrics||node-1": true},
		asked:  map[string]int{}}
}

// unlimited is a budget the tests of answers and caching never meet.
var unlimited = Budget{Rate: 1e9, Burst: 1 << 30, SourceRate: 1e9, SourceBurst: 1 << 30}

func newTestGuard(t *testing.T, spec string) (*Guard, *fakeReviewer, *testclock.FakePassiveClock, map[string]int) {
	t.Helper()
	return newBudgetGuard(t, spec, unlimited)
}

// newBudgetGuard is newTestGuard with a budget (zero: the default).
func newBudgetGuard(t *testing.T, spec string, b Budget) (*Guard, *fakeReviewer, *testclock.FakePassiveClock, map[string]int) {
	t.Helper()
	attrs, err := ParseResource(spec, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeReviewer()
	clk := testclock.NewFakePassiveClock(time.Unix(1e9, 0))
	counts := map[string]int{}
	g := NewGuard(Options{Reviewer: f, Attributes: attrs, Clock: clk, CacheTTL: 2 * time.Minute, Budget: b,
		Count: func(r string) { counts[r]++ }})
	return g, f, clk, counts
}

func serve(g *Guard, path, token string) *httptest.ResponseRecorder {
	return serveFrom(g, "192.0.2.1:1234", path, token)
}

// serveFrom asks g for path with token from the client address from.
func serveFrom(g *Guard, from, path, token string) *httptest.ResponseRecorder {
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("secret")) }))
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = from
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestGuardAnswers(t *testing.T) {
	g, _, _, counts := newTestGuard(t, "")
	for _, c := range []struct {
		path, token string
		code        int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "forged", http.StatusUnauthorized},
		{"/metrics", "weak", http.StatusForbidden},
		{"/events", "good", http.StatusForbidden},
		{"/metrics", "good", http.StatusOK},
	} {
		w := serve(g, c.path, c.token)
		if w.Code != c.code {
			t.Errorf("GET %s with token %q: %d %s, want %d", c.path, c.token, w.Code, w.Body, c.code)
		}
		if c.code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s with token %q: 401 without WWW-Authenticate", c.path, c.token)
		}
		if c.code != http.StatusOK && w.Body.String() == "secret" {
			t.Errorf("GET %s with token %q: the body leaked", c.path, c.token)
		}
	}
	want := map[string]int{ResultUnauthenticated: 2, ResultForbidden: 2, ResultAllowed: 1}
	for r, n := range want {
		if counts[r] != n {
			t.Errorf("count %s = %d, want %d (all: %v)", r, counts[r], n, counts)
		}
	}
}

func TestGuardResourceAttributes(t *testing.T) {
	g, _, _, _ := newTestGuard(t, "nodes/metrics")
	if w := serve(g, "/events", "good"); w.Code != http.StatusOK {
		t.Errorf("prometheus may get nodes/metrics of node-1, so any path: got %d %s", w.Code, w.Body)
	}
	if w := serve(g, "/metrics", "weak"); w.Code != http.StatusForbidden {
		t.Errorf("nobody may not: got %d", w.Code)
	}
}

func TestGuardCachesForItsTTL(t *testing.T) {
	g, f, clk, _ := newTestGuard(t, "")
	serve(g, "/metrics", "good")
	serve(g, "/metrics", "good")
	if f.reviews != 2 {
		t.Fatalf("two requests made %d reviews, want 2 (one of each, then the cache)", f.reviews)
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	serve(g, "/metrics", "good")
	if f.reviews != 4 {
		t.Errorf("after the TTL, %d reviews, want 4", f.reviews)
	}
	serve(g, "/metrics", "weak")
	clk.SetTime(clk.Now().Add(30 * time.Second))
	before := f.reviews
	serve(g, "/metrics", "weak")
	if f.reviews != before+1 {
		t.Errorf("a no is kept 30s at most: %d reviews after it, want 1", f.reviews-before)
	}
}

func TestGuardReviewErrorsAreNotCached(t *testing.T) {
	g, f, _, counts := newTestGuard(t, "")
	f.err = errors.New("connection refused")
	if w := serve(g, "/metrics", "good"); w.Code != http.StatusUnauthorized {
		t.Errorf("with the API server away: %d, want 401", w.Code)
	}
	if counts[ResultReviewError] != 1 {
		t.Errorf("counts %v, want one review_error", counts)
	}
	f.err = nil
	if w := serve(g, "/metrics", "good"); w.Code != http.StatusOK {
		t.Errorf("once it is back: %d, want 200", w.Code)
	}
}

func TestCacheStaysBounded(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1e9, 0))
	c := newTTLCache[bool](clk)
	for i := range 3 * maxCacheEntries {
		c.put(string(rune(i)), true, time.Minute)
	}
	if n := c.len(); n > maxCacheEntries {
		t.Errorf("%d entries, want at most %d", n, maxCacheEntries)
	}
}

func TestParseResource(t *testing.T) {
	for _, bad := range []string{"Nodes/metrics", "nodes/", "/metrics", "nodes/metrics/x", "nodes.apps/x/y"} {
		if _, err := ParseResource(bad, "n"); err == nil {
			t.Errorf("ParseResource(%q) accepted", bad)
		}
	}
	attrs, err := ParseResource("deployments.apps/scale", "n")
	if err != nil {
		t.Fatal(err)
	}
	a := attrs(httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if r := a.Resource; r.Group != "apps" || r.Resource != "deployments" || r.Subresource != "scale" || r.Name != "n" || r.Verb != "get" {
		t.Errorf("got %+v", r)
	}
}

func FuzzParseResource(f *testing.F) {
	for _, s := range []string{"", "nodes/metrics", "deployments.apps/scale", "a.b.c/d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		attrs, err := ParseResource(spec, "n")
		if err != nil {
			return
		}
		_ = attrs(httptest.NewRequest(http.MethodGet, "/metrics", nil))
	})
}
