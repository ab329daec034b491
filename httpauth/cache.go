package httpauth

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// maxCacheEntries bounds each cache: a flood of made-up tokens drops the
// cache instead of growing it.
const maxCacheEntries = 1024

// ttlCache keeps review answers until they expire.
type ttlCache[V any] struct {
	clk     clock.PassiveClock
	mu      sync.Mutex
	entries map[string]cached[V]
}

type cached[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](clk clock.PassiveClock) *ttlCache[V] {
	return &ttlCache[V]{clk: clk, entries: map[string]cached[V]{}}
}

func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.clk.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *ttlCache[V]) put(key string, v V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	if len(c.entries) >= maxCacheEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCacheEntries {
			c.entries = map[string]cached[V]{}
		}
	}
	c.entries[key] = cached[V]{value: v, expires: now.Add(ttl)}
}
