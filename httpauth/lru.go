package httpauth

import "container/list"

// lru maps keys to values, keeping at most capacity of them: adding one
// more drops the least recently used. It is not safe for concurrent use.
type lru[V any] struct {
	capacity int
	order    *list.List // of *lruEntry[V], most recently used first
	entries  map[string]*list.Element
}

type lruEntry[V any] struct {
	key   string
	value V
}

func newLRU[V any](capacity int) *lru[V] {
	return &lru[V]{capacity: max(capacity, 1), order: list.New(), entries: map[string]*list.Element{}}
}

// get returns the value of key and marks it used.
func (l *lru[V]) get(key string) (V, bool) {
	e, ok := l.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).value, true
}

// put sets the value of key, marks it used, and drops the least recently
// used entry when there are more than capacity.
func (l *lru[V]) put(key string, v V) {
	if e, ok := l.entries[key]; ok {
		e.Value.(*lruEntry[V]).value = v
		l.order.MoveToFront(e)
		return
	}
	l.entries[key] = l.order.PushFront(&lruEntry[V]{key: key, value: v})
	if l.order.Len() > l.capacity {
		l.remove(l.order.Back())
	}
}

func (l *lru[V]) remove(e *list.Element) {
	l.order.Remove(e)
	delete(l.entries, e.Value.(*lruEntry[V]).key)
}

func (l *lru[V]) len() int { return l.order.Len() }
