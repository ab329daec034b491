package httpauth

import (
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Budget bounds the TokenReviews and SubjectAccessReviews a Guard asks
// the API server for: Rate a second and Burst at once from all callers
// together, and SourceRate and SourceBurst from each source (client IP).
// A request whose answers are cached costs nothing.
type Budget struct {
	Rate        float64
	Burst       int
	SourceRate  float64
	SourceBurst int
}

// DefaultBudget is what a legitimate caller never meets. A scraper costs
// two reviews (its token, then its right to the path) per token and
// cache TTL (10 m by default): one every 5 minutes. So a source gets one review each
// 5 s (12 a minute) and 10 at once (a new token and a few paths, for a
// few identities behind one address, such as a node's own clients); and
// the port asks the API server at most 5 a second, 20 at once (twice a
// source's burst, so one address never spends it all), however many
// sources flood it. One pod alone gets 12 reviews a minute.
var DefaultBudget = Budget{Rate: 5, Burst: 20, SourceRate: 0.2, SourceBurst: 10}

// maxSources bounds the per-source budgets kept: past it the least
// recently seen source's goes (it starts afresh if it comes back, within
// the global budget).
const maxSources = 1024

// throttledError says a review was not asked: the budget had no room.
type throttledError struct{ retryAfter time.Duration }

func (e *throttledError) Error() string {
	return fmt.Sprintf("review budget spent; room again in %v", e.retryAfter)
}

// seconds is the Retry-After header's value: whole seconds, at least 1.
func (e *throttledError) seconds() int {
	return max(1, int(math.Ceil(e.retryAfter.Seconds())))
}

// reviewBudget holds the global token bucket and each source's, filled
// by the injected clock.
type reviewBudget struct {
	b       Budget
	clk     clock.PassiveClock
	mu      sync.Mutex
	global  *rate.Limiter
	sources *lru[*rate.Limiter]
}

func newReviewBudget(b Budget, clk clock.PassiveClock) *reviewBudget {
	if b == (Budget{}) {
		b = DefaultBudget
	}
	return &reviewBudget{b: b, clk: clk, global: rate.NewLimiter(rate.Limit(b.Rate), b.Burst), sources: newLRU[*rate.Limiter](maxSources)}
}

// admit takes one review from src's budget and the global one, or returns
// a throttledError saying when both will have room. A renewal (asking
// again about a token or a decision whose last answer was yes) takes
// what room there is but is never refused: a scraper whose token was good
// stays served however long a flood lasts, and renewals are bounded by
// the cache (each entry's once per TTL).
func (rb *reviewBudget) admit(src string, renewal bool) error {
	now := rb.clk.Now()
	rb.mu.Lock()
	defer rb.mu.Unlock()
	per, ok := rb.sources.get(src)
	if !ok {
		per = rate.NewLimiter(rate.Limit(rb.b.SourceRate), rb.b.SourceBurst)
		rb.sources.put(src, per)
	}
	if !renewal {
		for _, l := range []*rate.Limiter{per, rb.global} {
			if wait := untilOne(l, now); wait > 0 {
				return &throttledError{retryAfter: wait}
			}
		}
	}
	per.AllowN(now, 1)
	rb.global.AllowN(now, 1)
	return nil
}

// untilOne is how long until l has a whole token; 0 when it has one.
func untilOne(l *rate.Limiter, now time.Time) time.Duration {
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	if l.Limit() <= 0 {
		return time.Hour
	}
	return time.Duration((1 - tokens) / float64(l.Limit()) * float64(time.Second))
}

// sourceOf is who a request or connection comes from, for the per-source
// budgets and connection limits: the client's IP address.
func sourceOf(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}
