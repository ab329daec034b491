package httpauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
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
	ResultThrottled       = "throttled"
)

// ResultsHelp is the help text of each binary's counter of results.
const ResultsHelp = "Requests to the secure port by result: allowed, unauthenticated, forbidden, review_error, or throttled (429: the review budget was spent)."

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
	// Budget bounds the reviews asked; the zero Budget is DefaultBudget.
	Budget Budget
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
// knows and whose user may get the path (or the configured resource),
// asking the API server within a budget.
type Guard struct {
	o         Options
	budget    *reviewBudget
	users     *ttlCache[authResult]
	decisions *ttlCache[decision]
}

// NewGuard returns a Guard for o.
func NewGuard(o Options) *Guard {
	if o.Count == nil {
		o.Count = func(string) {}
	}
	return &Guard{o: o, budget: newReviewBudget(o.Budget, o.Clock),
		users: newTTLCache[authResult](o.Clock), decisions: newTTLCache[decision](o.Clock)}
}

// Wrap guards next: 401 without a valid token, 403 without the right, 429
// when a review is needed and the budget has no room.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
		defer cancel()
		src := sourceOf(r.RemoteAddr)
		user, ok, err := g.authenticate(ctx, src, r)
		if err != nil || !ok {
			g.refuse(w, http.StatusUnauthorized, ResultUnauthenticated, err, "Unauthorized")
			return
		}
		allowed, reason, err := g.authorize(ctx, src, user, g.o.Attributes(r))
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

// refuse answers code (429 when the budget was spent), and closes the
// connection: only callers let through keep theirs open.
func (g *Guard) refuse(w http.ResponseWriter, code int, result string, err error, msg string) {
	w.Header().Set("Connection", "close")
	var throttled *throttledError
	switch {
	case errors.As(err, &throttled):
		code, result = http.StatusTooManyRequests, ResultThrottled
		w.Header().Set("Retry-After", strconv.Itoa(throttled.seconds()))
		msg = "Too Many Requests: the port's budget of token reviews is spent; retry after " + strconv.Itoa(throttled.seconds()) + "s"
	case err != nil:
		klog.ErrorS(err, "Request to the secure port refused: the API server did not answer the review")
		result, msg = ResultReviewError, http.StatusText(code)+": the review failed"
	}
	g.o.Count(result)
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hangwatch"`)
	}
	http.Error(w, msg, code)
}

func (g *Guard) authenticate(ctx context.Context, src string, r *http.Request) (User, bool, error) {
	auth := r.Header.Get("Authorization")
	scheme, token, found := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return User{}, false, nil
	}
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	res, fresh, known := g.users.lookup(key)
	if fresh {
		return res.user, res.ok, nil
	}
	if err := g.budget.admit(src, known && res.ok); err != nil {
		return User{}, false, err
	}
	user, ok, err := g.o.Reviewer.Authenticate(ctx, token)
	if err != nil {
		return User{}, false, err
	}
	g.users.put(key, authResult{user: user, ok: ok}, g.ttl(ok))
	return user, ok, nil
}

func (g *Guard) authorize(ctx context.Context, src string, u User, a Attributes) (bool, string, error) {
	key := u.Name + "\x00" + u.UID + "\x00" + strings.Join(u.Groups, ",") + "\x00" + a.key()
	d, fresh, known := g.decisions.lookup(key)
	if fresh {
		return d.allowed, d.reason, nil
	}
	if err := g.budget.admit(src, known && d.allowed); err != nil {
		return false, "", err
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
