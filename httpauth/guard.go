package httpauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Results of a request to the secure port, as counted.
const (
	ResultAllowed         = "allowed"
	ResultUnauthenticated = "unauthenticated"
	ResultForbidden       = "forbidden"
	ResultReviewError     = "review_error"
)

const (
	// deniedTTL caps how long a no is cached, so a binding just created
	// takes effect soon.
	deniedTTL = 30 * time.Second
	// reviewTimeout bounds a review when the request has no shorter deadline.
	reviewTimeout = 10 * time.Second
)

// Options configure a Guard.
type Options struct {
	Reviewer   Reviewer
	Attributes AttributesFor
	Clock      clock.PassiveClock
	// CacheTTL is how long a yes is kept; a no is kept at most 30s.
	CacheTTL time.Duration
	// Count, when set, is called once per request with its result.
	Count func(result string)
}

type authResult struct {
	user User
	ok   bool
}

type decision struct {
	allowed bool
	reason  string
}

// Guard lets through only requests whose bearer token the API server
// knows and whose user may get the path (or the configured resource).
type Guard struct {
	o         Options
	users     *ttlCache[authResult]
	decisions *ttlCache[decision]
}

// NewGuard returns a Guard for o.
func NewGuard(o Options) *Guard {
	if o.Count == nil {
		o.Count = func(string) {}
	}
	return &Guard{o: o, users: newTTLCache[authResult](o.Clock), decisions: newTTLCache[decision](o.Clock)}
}

// Wrap guards next: 401 without a valid token, 403 without the right.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
		defer cancel()
		user, ok, err := g.authenticate(ctx, r)
		if err != nil || !ok {
			g.refuse(w, http.StatusUnauthorized, ResultUnauthenticated, err, "Unauthorized")
			return
		}
		allowed, reason, err := g.authorize(ctx, user, g.o.Attributes(r))
		if err != nil || !allowed {
			msg := "Forbidden: " + user.Name + " may not get " + r.URL.Path
			if reason != "" {
				msg += ": " + reason
			}
			g.refuse(w, http.StatusForbidden, ResultForbidden, err, msg)
			return
		}
		g.o.Count(ResultAllowed)
		next.ServeHTTP(w, r)
	})
}

func (g *Guard) refuse(w http.ResponseWriter, code int, result string, err error, msg string) {
	if err != nil {
		klog.ErrorS(err, "Request to the secure port refused: the API server did not answer the review")
		result, msg = ResultReviewError, http.StatusText(code)+": the review failed"
	}
	g.o.Count(result)
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hangwatch"`)
	}
	http.Error(w, msg, code)
}

func (g *Guard) authenticate(ctx context.Context, r *http.Request) (User, bool, error) {
	auth := r.Header.Get("Authorization")
	scheme, token, found := strings.Cut(auth, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return User{}, false, nil
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	key := hex.EncodeToString(sum[:])
	if res, ok := g.users.get(key); ok {
		return res.user, res.ok, nil
	}
	user, ok, err := g.o.Reviewer.Authenticate(ctx, strings.TrimSpace(token))
	if err != nil {
		return User{}, false, err
	}
	g.users.put(key, authResult{user: user, ok: ok}, g.ttl(ok))
	return user, ok, nil
}

func (g *Guard) authorize(ctx context.Context, u User, a Attributes) (bool, string, error) {
	key := u.Name + "\x00" + u.UID + "\x00" + strings.Join(u.Groups, ",") + "\x00" + a.key()
	if d, ok := g.decisions.get(key); ok {
		return d.allowed, d.reason, nil
	}
	allowed, reason, err := g.o.Reviewer.Authorize(ctx, u, a)
	if err != nil {
		return false, "", err
	}
	g.decisions.put(key, decision{allowed: allowed, reason: reason}, g.ttl(allowed))
	return allowed, reason, nil
}

func (g *Guard) ttl(yes bool) time.Duration {
	if yes {
		return g.o.CacheTTL
	}
	return min(g.o.CacheTTL, deniedTTL)
}
