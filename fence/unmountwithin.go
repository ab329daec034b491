package fence

import (
	"context"
	"fmt"
	"sync"
)

// pendingUnmount is an unmount of one mount point under way; done closes
// when it returns, with err.
type pendingUnmount struct {
	done chan struct{}
	err  error
}

// unmounts are the unmounts under way, by mount point. A umount2 that
// blocks in the kernel cannot be interrupted: its goroutine (and the
// thread under it) stays until the kernel returns, perhaps for ever. A
// later fence that needs the same mount point waits for that one rather
// than starting another, so at most one goroutine per mount point is ever
// stuck.
var (
	unmountsMu sync.Mutex
	unmounts   = map[string]*pendingUnmount{}
)

// unmountWithin runs unmount(target) in a goroutine and waits for it
// until ctx ends. When an earlier fence's unmount of target is still
// under way, it waits for that one first, then unmounts again: the
// earlier result was for an earlier look at the mount table. When ctx ends
// first it returns ctxFailure (ErrImpossible when the deadline passed),
// and the goroutine is left to finish in the kernel.
func unmountWithin(ctx context.Context, unmount func(string) error, target string) error {
	for {
		p, mine := startUnmount(unmount, target)
		select {
		case <-p.done:
			if mine {
				return p.err
			}
		case <-ctx.Done():
			return ctxFailure(ctx, fmt.Sprintf("unmount %s: no return (the call stays in the kernel)", target))
		}
	}
}

// startUnmount starts unmount(target) in a goroutine, unless one is under
// way for target: then it returns that one, and mine is false.
func startUnmount(unmount func(string) error, target string) (p *pendingUnmount, mine bool) {
	unmountsMu.Lock()
	defer unmountsMu.Unlock()
	if p, ok := unmounts[target]; ok {
		return p, false
	}
	p = &pendingUnmount{done: make(chan struct{})}
	unmounts[target] = p
	go func() {
		p.err = unmount(target)
		unmountsMu.Lock()
		delete(unmounts, target)
		unmountsMu.Unlock()
		close(p.done)
	}()
	return p, true
}
