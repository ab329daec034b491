package httpauth

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestSourceBudgetSpentAnswers429WithoutReview(t *testing.T) {
	g, f, clk, counts := newBudgetGuard(t, "", Budget{})
	for i := range DefaultBudget.SourceBurst {
		if w := serveFrom(g, "10.0.0.1:4000", "/metrics", fmt.Sprint("forged-", i)); w.Code != http.StatusUnauthorized {
			t.Fatalf("forged token %d within the budget: %d, want 401", i, w.Code)
		}
	}
	w := serveFrom(g, "10.0.0.1:4001", "/metrics", "forged-past")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "5" {
		t.Errorf("past the source's burst: %d Retry-After %q, want 429 and 5 (one review each 5 s)", w.Code, w.Header().Get("Retry-After"))
	}
	if w.Header().Get("Connection") != "close" {
		t.Errorf("a 429 keeps the connection open")
	}
	if f.reviews != DefaultBudget.SourceBurst || counts[ResultThrottled] != 1 {
		t.Errorf("%d reviews and %d throttled, want %d and 1: a 429 asks nothing", f.reviews, counts[ResultThrottled], DefaultBudget.SourceBurst)
	}
	clk.SetTime(clk.Now().Add(5 * time.Second))
	if w := serveFrom(g, "10.0.0.1:4002", "/metrics", "forged-later"); w.Code != http.StatusUnauthorized {
		t.Errorf("5 s later: %d, want 401 (one more review)", w.Code)
	}
	if w := serveFrom(g, "10.0.0.1:4003", "/metrics", "forged-again"); w.Code != http.StatusTooManyRequests {
		t.Errorf("then at once again: %d, want 429", w.Code)
	}
}

func TestGlobalBudgetBoundsEverySource(t *testing.T) {
	g, f, clk, _ := newBudgetGuard(t, "", Budget{})
	src := 0
	next := func() int {
		src++
		return serveFrom(g, fmt.Sprintf("10.0.1.%d:4000", src), "/metrics", fmt.Sprint("forged-", src)).Code
	}
	for range DefaultBudget.Burst {
		if code := next(); code != http.StatusUnauthorized {
			t.Fatalf("within the global burst: %d, want 401", code)
		}
	}
	w := serveFrom(g, "10.0.1.200:4000", "/metrics", "forged-past")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("a fresh source past the global burst: %d Retry-After %q, want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	clk.SetTime(clk.Now().Add(time.Second))
	for range int(DefaultBudget.Rate) {
		if code := next(); code != http.StatusUnauthorized {
			t.Errorf("a second later, within the rate: %d, want 401", code)
		}
	}
	if code := next(); code != http.StatusTooManyRequests {
		t.Errorf("past the rate: %d, want 429", code)
	}
	if want := DefaultBudget.Burst + int(DefaultBudget.Rate); f.reviews != want {
		t.Errorf("%d reviews, want %d", f.reviews, want)
	}
}

func TestSourceBudgetIsolatesSources(t *testing.T) {
	g, f, _, _ := newBudgetGuard(t, "", Budget{})
	for i := range 3 * DefaultBudget.SourceBurst {
		serveFrom(g, "10.0.2.1:4000", "/metrics", fmt.Sprint("forged-", i))
	}
	before := f.reviews
	if w := serveFrom(g, "10.0.2.2:4000", "/metrics", "good"); w.Code != http.StatusOK {
		t.Errorf("another source, while the first is throttled: %d %s, want 200", w.Code, w.Body)
	}
	if f.reviews != before+2 {
		t.Errorf("%d reviews for the other source, want 2", f.reviews-before)
	}
}

// spend floods g with made-up tokens from its scraper's address and from
// many others until both budgets are spent.
func spend(t *testing.T, g *Guard, scraper string) {
	t.Helper()
	for i := range 100 {
		serveFrom(g, scraper, "/metrics", fmt.Sprint("forged-", i))
		serveFrom(g, fmt.Sprintf("10.0.3.%d:4000", i), "/metrics", fmt.Sprint("forged-other-", i))
	}
	if w := serveFrom(g, "10.0.4.1:4000", "/metrics", "forged-check"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("after the flood a new source got %d, want 429", w.Code)
	}
}

func TestCachedTokenServedWhileBudgetSpent(t *testing.T) {
	g, f, clk, _ := newBudgetGuard(t, "", Budget{})
	const scraper = "10.0.3.250:4000"
	if w := serveFrom(g, scraper, "/metrics", "good"); w.Code != http.StatusOK {
		t.Fatalf("the scraper: %d", w.Code)
	}
	spend(t, g, scraper)
	before := f.reviews
	if w := serveFrom(g, scraper, "/metrics", "good"); w.Code != http.StatusOK || f.reviews != before {
		t.Errorf("the scraper's cached token during the flood: %d with %d reviews, want 200 with none", w.Code, f.reviews-before)
	}
	// Past the TTL, the scraper's token and decision are asked again: a
	// renewal of a yes, never refused for the budget.
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	spend(t, g, scraper)
	before = f.reviews
	if w := serveFrom(g, scraper, "/metrics", "good"); w.Code != http.StatusOK || f.reviews != before+2 {
		t.Errorf("the scraper's renewal during the flood: %d with %d reviews, want 200 with 2", w.Code, f.reviews-before)
	}
	if w := serveFrom(g, scraper, "/metrics", "weak"); w.Code != http.StatusTooManyRequests {
		t.Errorf("a token never seen, from the scraper's address: %d, want 429", w.Code)
	}
}

// TestFloodKeepsRecentlyUsedToken: 10,000 made-up tokens, each reviewed
// (an unlimited budget) and cached, while a scraper asks every 100 of
// them: the cache drops the oldest made-up answers, never the scraper's.
func TestFloodKeepsRecentlyUsedToken(t *testing.T) {
	g, f, clk, _ := newBudgetGuard(t, "", unlimited)
	for i := range 10_000 {
		if i%100 == 0 {
			if w := serveFrom(g, "10.0.5.1:4000", "/metrics", "good"); w.Code != http.StatusOK {
				t.Fatalf("the scraper after %d made-up tokens: %d", i, w.Code)
			}
		}
		serveFrom(g, fmt.Sprintf("10.0.6.%d:4000", i%250), "/metrics", fmt.Sprint("forged-", i))
		clk.SetTime(clk.Now().Add(10 * time.Millisecond))
	}
	if n := f.asked["good"]; n != 1 {
		t.Errorf("the scraper's token was reviewed %d times in the flood, want once", n)
	}
	if n := g.users.len(); n != maxCacheEntries {
		t.Errorf("%d cached tokens, want %d", n, maxCacheEntries)
	}
}

func TestLRUDropsLeastRecentlyUsed(t *testing.T) {
	l := newLRU[int](3)
	l.put("a", 1)
	l.put("b", 2)
	l.put("c", 3)
	l.get("a")
	l.put("d", 4)
	if _, ok := l.get("b"); ok {
		t.Error("b, the least recently used, was kept")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := l.get(k); !ok {
			t.Errorf("%s was dropped", k)
		}
	}
	l.put("a", 10)
	if v, _ := l.get("a"); v != 10 || l.len() != 3 {
		t.Errorf("a = %d with %d entries, want 10 with 3", v, l.len())
	}
}

func TestSourceBudgetsStayBounded(t *testing.T) {
	b := newReviewBudget(Budget{}, testclock.NewFakePassiveClock(time.Unix(1e9, 0)))
	for i := range 4 * maxSources {
		_ = b.admit(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), false)
	}
	if n := b.sources.len(); n != maxSources {
		t.Errorf("%d source budgets kept, want %d", n, maxSources)
	}
}
