package cri

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// CallResult is what one probe learned about one call.
type CallResult struct {
	Method string
	// Object is the sandbox or container ID of a per-object call.
	Object string
	Start  time.Time
	// Duration is how long the call took, or, while it is in flight, how
	// long it had been out when it was reported.
	Duration time.Duration
	Class    Class
	// InFlight is true when the call had not returned when it was reported.
	InFlight bool
	// Err is the call's error text, empty on success.
	Err string
	// ResponseBytes is the answer's size; for a stream, its largest message.
	ResponseBytes int
	// Messages and FirstMessage are a stream's messages so far and how long
	// the first took to arrive (zero before it or for a unary call).
	Messages     int
	FirstMessage time.Duration

	resp proto.Message
}

// Observer receives what the prober sees. ObserveProbe is called once per
// probed call when the caller stops waiting; ObserveCompletion when the call
// really returns, which for a hung call may be much later.
type Observer interface {
	ObserveProbe(r CallResult)
	ObserveCompletion(r CallResult)
	// ObserveCycle is told each full cycle's counts and runtime conditions.
	ObserveCycle(c Cycle)
}

type rpc func(ctx context.Context) (proto.Message, error)

// invoke sends one call and waits for it at most the per-call timeout. A
// call already out is not sent again: invoke waits for its answer until
// it has been out the timeout, then reports it timed out with its age.
func (p *Prober) invoke(ctx context.Context, method, object string, call rpc) CallResult {
	return p.invokeTallied(ctx, callKey{method: method, object: object}, call, nil)
}

// invokeTallied is invoke for a call whose progress tally records: a
// stream, timed to its first message and to its end.
func (p *Prober) invokeTallied(ctx context.Context, key callKey, call rpc, tally *streamTally) CallResult {
	method, object := key.method, key.object
	start := p.clock.Now()
	if out, sent := p.inflight.begin(key, start); !sent {
		return p.report(p.join(ctx, out, method, object))
	}
	done := make(chan CallResult, 1)
	if tally != nil {
		tally.onMessage = func() { p.inflight.heard(method) }
	}
	go p.run(ctx, key, start, call, tally, done)

	timer := p.clock.NewTimer(p.cfg.Timeout)
	select {
	case r := <-done:
		timer.Stop() // before the report: a reported call leaves no timer behind
		return p.report(r)
	case <-timer.C():
	case <-ctx.Done():
		timer.Stop()
	}
	select {
	case r := <-done: // answered just as the wait ended
		return p.report(r)
	default:
	}
	class := ClassTimeout
	if ctx.Err() != nil {
		class = ClassifyError(ctx.Err())
	}
	r := CallResult{Method: method, Object: object, Start: start,
		Duration: p.clock.Since(start), Class: class, InFlight: true}
	tally.fill(&r)
	return p.report(r)
}

// run performs the call under its own lifetime and records its completion.
func (p *Prober) run(ctx context.Context, key callKey, start time.Time, call rpc, tally *streamTally, done chan<- CallResult) {
	callCtx, cancel := context.WithTimeout(ctx, p.cfg.CallLifetime)
	defer cancel()
	resp, err := call(callCtx)
	r := CallResult{Method: key.method, Object: key.object, Start: start, Duration: p.clock.Since(start)}
	r.Class = p.classify(r.Duration, err)
	if tally != nil && status.Code(err) == codes.Unimplemented {
		r.Class = ClassUnimplemented // a stream the runtime lacks; the unary list stands in
	}
	if err != nil {
		r.Err = err.Error() // resp is a typed nil here: keep r.resp a true nil
	} else {
		r.resp, r.ResponseBytes = resp, proto.Size(resp)
	}
	tally.fill(&r)
	p.inflight.end(key, r)
	p.observer.ObserveCompletion(r)
	done <- r
	if r.Duration > p.cfg.Timeout {
		// It was reported hung, and the last cycle still says so: look
		// again now rather than after the back-off (a thaw clears at once).
		// Only once it is out of the in-flight table, or the woken cycle
		// would find it still out.
		p.Wake()
	}
}

// join waits for the same call sent by someone else (a heartbeat's
// Version while a cycle's is out) until it has been out the per-call
// timeout. Its answer is shared; past the timeout it is reported hung.
func (p *Prober) join(ctx context.Context, out *outstanding, method, object string) CallResult {
	age := p.clock.Since(out.start)
	if age < p.cfg.Timeout {
		timer := p.clock.NewTimer(p.cfg.Timeout - age)
		defer timer.Stop()
		select {
		case <-out.done:
			return out.result
		case <-timer.C():
		case <-ctx.Done():
		}
	}
	select {
	case <-out.done:
		return out.result
	default:
	}
	now := p.clock.Now()
	r := stillOut(method, object, now, now.Sub(out.start))
	if ctx.Err() != nil {
		r.Class = ClassifyError(ctx.Err())
	}
	return r
}

// stillOut is a call sent by an earlier cycle that has not answered yet.
func stillOut(method, object string, now time.Time, age time.Duration) CallResult {
	return CallResult{Method: method, Object: object, Start: now.Add(-age), Duration: age, Class: ClassTimeout, InFlight: true}
}

func (p *Prober) classify(d time.Duration, err error) Class {
	switch {
	case err != nil:
		return ClassifyError(err)
	case d > p.cfg.Timeout:
		return ClassTimeout // answered, but only after the caller gave up
	case d > p.cfg.SlowThreshold:
		return ClassSlow
	}
	return ClassOK
}

func (p *Prober) report(r CallResult) CallResult {
	p.observer.ObserveProbe(r)
	return r
}
