// Package filewatch reloads a file when its content changes: read every
// poll, and at once on a signal (SIGHUP). New content goes to Apply; when
// Apply refuses it, the running settings stay and the refusal is told
// once, until the content changes again. A changed file that fails once
// is refused only when a later poll reads the same content: an editor
// that truncates and then writes is read half-written now and then. A
// read that fails on a poll is read again at the next (a ConfigMap
// mid-swap); on a signal it is a refusal.
//
// It serves the agent's --config (its rules), the repair process's (its
// settings) and hangwatch-remedy's policy file alike.
package filewatch

import (
	"context"
	"crypto/sha256"
	"os"
	"time"

	"k8s.io/utils/clock"
)

// Watcher watches one file. Set the fields, then Run.
type Watcher struct {
	// Path is the file.
	Path string
	// Read reads it (a bounded read); nil: os.ReadFile.
	Read func(path string) ([]byte, error)
	// Poll is the time between reads.
	Poll  time.Duration
	Clock clock.WithTicker
	// Signal forces a read and an Apply, changed or not; nil: none.
	Signal <-chan os.Signal
	// Forced, when set, is told of each forced read before it.
	Forced func()
	// Apply puts new content in effect, or refuses it with an error.
	Apply func(raw []byte) error
	// Refused is told each refusal.
	Refused func(err error)

	sum       [sha256.Size]byte // of the content last applied or refused
	unsettled [sha256.Size]byte // of changed content that failed once
}

// Running says the content in effect at the start: until it changes,
// nothing is applied.
func (w *Watcher) Running(raw []byte) { w.sum = sha256.Sum256(raw) }

// RunningSum is Running with the content's SHA-256.
func (w *Watcher) RunningSum(sum [sha256.Size]byte) { w.sum = sum }

// Run reads every Poll and on each Signal until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	tick := w.Clock.NewTicker(w.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.Signal:
			if w.Forced != nil {
				w.Forced()
			}
			w.Check(true)
		case <-tick.C():
			w.Check(false)
		}
	}
}

// Check reads the file and applies its content when it changed, or
// always when forced.
func (w *Watcher) Check(force bool) {
	read := w.Read
	if read == nil {
		read = os.ReadFile
	}
	raw, err := read(w.Path)
	if err != nil {
		if force {
			w.refuse(err)
		}
		return
	}
	sum := sha256.Sum256(raw)
	if sum == w.sum && !force {
		return
	}
	err = w.Apply(raw)
	if err != nil && !force && sum != w.unsettled {
		w.unsettled = sum // read it again at the next poll
		return
	}
	w.sum, w.unsettled = sum, [sha256.Size]byte{}
	if err != nil {
		w.refuse(err)
	}
}

func (w *Watcher) refuse(err error) {
	if w.Refused != nil {
		w.Refused(err)
	}
}
