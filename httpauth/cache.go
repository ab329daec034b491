package httpauth

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// maxCacheEntries bounds each cache: past it, the least recently used
// answer goes, so a flood of made-up tokens pushes out only answers older
// than its own and never the one a scraper asks with every few seconds.
const maxCacheEntries = 1024

// ttlCache keeps review answers for their TTL, the maxCacheEntries most
// recently used of them. An expired answer stays until it is pushed out,
// so that the guard knows a token it is asked about again was good.
type ttlCache[V any] struct {
	clk     clock.PassiveClock
	mu      sync.Mutex
	entries *lru[cached[V]]
}

type cached[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](clk clock.PassiveClock) *ttlCache[V] {
	return &ttlCache[V]{clk: clk, entries: newLRU[cached[V]](maxCacheEntries)}
}

// lookup returns the last answer for key, whether it is still fresh, and
// whether there is one at all.
func (c *ttlCache[V]) lookup(key string) (v V, fresh, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries.get(key)
	if !ok {
		return v, false, false
	}
	return e.value, c.clk.Now().Before(e.expires), true
}

// put keeps v for ttl; nothing when ttl is not positive.
func (c *ttlCache[V]) put(key string, v V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.put(key, cached[V]{value: v, expires: c.clk.Now().Add(ttl)})
}

func (c *ttlCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.len()
}
