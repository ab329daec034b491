package cri

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type objectCall struct {
	method string
	id     string
	call   rpc
}

// objectCalls reads the status of a sample of sandboxes and containers with
// bounded concurrency. Per-object calls still out from an earlier cycle are
// reported again and no new ones are sent; the first timeout in this cycle
// stops the rest, so a runtime that is slowing down gets no more work.
func (p *Prober) objectCalls(ctx context.Context, pods []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) []CallResult {
	if stuck := p.stuckObjectCalls(); len(stuck) > 0 {
		return stuck
	}
	calls := p.pickObjectCalls(pods, ctrs)
	results := make([]CallResult, len(calls))
	sent := make([]bool, len(calls))
	var stop atomic.Bool
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < p.cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if stop.Load() {
					continue // a call already timed out: send no more
				}
				results[i] = p.invoke(ctx, calls[i].method, calls[i].id, calls[i].call)
				sent[i] = true
				if results[i].Class == ClassTimeout {
					stop.Store(true)
				}
			}
		}()
	}
	for i := range calls {
		if stop.Load() || ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	out := results[:0]
	for i, r := range results {
		if sent[i] {
			out = append(out, r)
		}
	}
	return out
}

// stuckObjectCalls reports the per-object calls that are still out.
func (p *Prober) stuckObjectCalls() []CallResult {
	var out []CallResult
	now := p.clock.Now()
	for _, c := range p.inflight.snapshot() {
		if c.Object == "" {
			continue
		}
		out = append(out, p.report(stillOut(c.Method, c.Object, now, c.Age)))
	}
	return out
}

func (p *Prober) pickObjectCalls(pods []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) []objectCall {
	podObjs := make([]object, 0, len(pods))
	for _, s := range pods {
		podObjs = append(podObjs, object{id: s.Id, state: int32(s.State)})
	}
	ctrObjs := make([]object, 0, len(ctrs))
	for _, c := range ctrs {
		ctrObjs = append(ctrObjs, object{id: c.Id, state: int32(c.State)})
	}
	p.cycles++
	readPods, readCtrs := true, true
	if p.cfg.AlternateKinds {
		readPods, readCtrs = p.cycles%2 == 1, p.cycles%2 == 0
	}
	var calls []objectCall
	for _, id := range pickIf(readPods, p.sandboxes, podObjs, p.cfg.SampleSize) {
		calls = append(calls, objectCall{MethodPodSandboxStatus, id, func(ctx context.Context) (proto.Message, error) {
			return p.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
		}})
	}
	for _, id := range pickIf(readCtrs, p.containers, ctrObjs, p.cfg.SampleSize) {
		calls = append(calls, objectCall{MethodContainerStatus, id, func(ctx context.Context) (proto.Message, error) {
			return p.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		}})
	}
	return calls
}

// pickIf picks from objs when this cycle reads their kind.
func pickIf(read bool, s *sampler, objs []object, n int) []string {
	if !read {
		return nil
	}
	return s.pick(objs, n)
}
