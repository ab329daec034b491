package httpauth

import (
	"net"
	"sync"
)

// limitListener accepts at most perSource connections at once from one
// source (client IP) and total from all; a connection past either is
// closed at once. Accept never waits for a slot, so connections from a
// source over its share never queue ahead of another source's.
type limitListener struct {
	net.Listener
	perSource, total int
	mu               sync.Mutex
	open             map[string]int // by source; at most total entries
	n                int
}

func newLimitListener(ln net.Listener, perSource, total int) *limitListener {
	return &limitListener{Listener: ln, perSource: perSource, total: total, open: map[string]int{}}
}

// Accept returns the next connection within the limits, closing those past them.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := sourceOf(c.RemoteAddr().String())
		if l.take(src) {
			return &limitedConn{Conn: c, release: func() { l.release(src) }}, nil
		}
		_ = c.Close()
	}
}

func (l *limitListener) take(src string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n >= l.total || l.open[src] >= l.perSource {
		return false
	}
	l.n++
	l.open[src]++
	return true
}

func (l *limitListener) release(src string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.open[src]--; l.open[src] <= 0 {
		delete(l.open, src)
	}
}

// limitedConn gives its slot back when it is closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
