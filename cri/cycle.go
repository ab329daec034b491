package cri

import (
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeInfo is what Version said.
type RuntimeInfo struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	APIVersion string `json:"apiVersion"`
}

// RuntimeCondition is one condition from the Status call. Required marks
// the two the kubelet acts on; any other (containerd 2.2+ adds
// ContainerdHasNoDeprecationWarnings) is information only.
type RuntimeCondition struct {
	Type     string `json:"type"`
	Status   bool   `json:"status"`
	Required bool   `json:"required"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
}

// RequiredConditions are the runtime conditions the kubelet requires: it
// reports the node not ready when either is false and ignores the rest.
var RequiredConditions = []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady}

// NotReady lists the required conditions reported false, in order.
func NotReady(conds []RuntimeCondition) []string {
	out := []string{}
	for _, c := range conds {
		if c.Required && !c.Status {
			out = append(out, c.Type)
		}
	}
	return out
}

// Cycle is the result of one probe cycle.
type Cycle struct {
	Start    time.Time
	Duration time.Duration
	Calls    []CallResult
	Runtime  RuntimeInfo
	// Conditions are the runtime's own conditions, when Status answered.
	Conditions []RuntimeCondition
	// Sandboxes and Containers are the counts listed, -1 when unknown.
	Sandboxes  int
	Containers int
	// Streaming is whether the runtime implements the list streams, as
	// known after this cycle.
	Streaming Streaming
	// SocketReplaced says the runtime's socket was recreated since the last
	// cycle (a restart or upgrade), so this cycle dialed it afresh.
	SocketReplaced bool
}

// Cycle runs one probe cycle. It returns within about two per-call
// timeouts however the runtime behaves, sooner if ctx ends.
func (p *Prober) Cycle(ctx context.Context) Cycle {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Cycle{Start: p.clock.Now(), Sandboxes: -1, Containers: -1}
	p.share.cycleStarted(c.Start)
	if p.redial != nil {
		c.SocketReplaced = p.redial()
	}
	fixed := p.fixedCalls(ctx)
	c.Calls = append(c.Calls, fixed...)
	var pods []*runtimeapi.PodSandbox
	var ctrs []*runtimeapi.Container
	for _, r := range fixed {
		if r.resp == nil {
			continue
		}
		if info, ok := runtimeInfo(r); ok {
			c.Runtime = info
		}
		switch resp := r.resp.(type) {
		case *runtimeapi.StatusResponse:
			c.Conditions = runtimeConditions(resp)
		case *runtimeapi.ListPodSandboxResponse:
			pods = resp.Items
			c.Sandboxes = len(pods)
		case *runtimeapi.ListContainersResponse:
			ctrs = resp.Containers
			c.Containers = len(ctrs)
		}
	}
	if p.share.versionByBeat.Load() {
		c.Runtime = p.share.runtimeOf()
	}
	p.learnStreams(&c)
	if c.Sandboxes >= 0 && c.Containers >= 0 && !anyTimeout(fixed) {
		c.Calls = append(c.Calls, p.objectCalls(ctx, pods, ctrs)...)
	}
	c.Duration = p.clock.Since(c.Start)
	p.observer.ObserveCycle(c)
	return c
}

// fixedCall is one call made once per cycle; tally is set for a stream.
type fixedCall struct {
	method string
	call   rpc
	tally  *streamTally
}

// fixedCalls runs the calls made once per cycle, all at once, so a frozen
// runtime costs the caller one timeout, not one per call. Version is left
// out when a heartbeat makes it (VersionByHeartbeat). The list
// streams join them unless the runtime said it does not implement them or
// the kubelet does not use them.
func (p *Prober) fixedCalls(ctx context.Context) []CallResult {
	var calls []fixedCall
	if !p.share.versionByBeat.Load() {
		calls = append(calls, fixedCall{method: MethodVersion, call: func(ctx context.Context) (proto.Message, error) {
			return p.runtime.Version(ctx, &runtimeapi.VersionRequest{})
		}})
	}
	calls = append(calls, []fixedCall{
		{method: MethodStatus, call: func(ctx context.Context) (proto.Message, error) {
			return p.runtime.Status(ctx, &runtimeapi.StatusRequest{})
		}},
		{method: MethodListPodSandbox, call: func(ctx context.Context) (proto.Message, error) {
			return p.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		}},
		{method: MethodListContainers, call: func(ctx context.Context) (proto.Message, error) {
			return p.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{}})
		}},
		{method: MethodImageFsInfo, call: func(ctx context.Context) (proto.Message, error) {
			return p.image.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
		}},
	}...)
	if p.streams.usable() && !p.skipStreams.Load() {
		calls = append(calls, p.streamCalls()...)
	}
	results := make([]CallResult, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.invokeTallied(ctx, callKey{method: c.method}, c.call, c.tally)
		}()
	}
	wg.Wait()
	return results
}

// streamCalls are the list streams, each answered as its unary list would
// be once the stream has ended.
func (p *Prober) streamCalls() []fixedCall {
	pods, ctrs := newStreamTally(p.clock), newStreamTally(p.clock)
	return []fixedCall{
		{method: MethodStreamPodSandboxes, tally: pods, call: func(ctx context.Context) (proto.Message, error) {
			items, err := streamSandboxes(ctx, p.runtime, nil, pods)
			if err != nil {
				return nil, err
			}
			return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
		}},
		{method: MethodStreamContainers, tally: ctrs, call: func(ctx context.Context) (proto.Message, error) {
			items, err := streamContainers(ctx, p.runtime, &runtimeapi.ContainerFilter{}, ctrs)
			if err != nil {
				return nil, err
			}
			return &runtimeapi.ListContainersResponse{Containers: items}, nil
		}},
	}
}

// learnStreams records whether the runtime implements the list streams and
// drops an Unimplemented answer from the cycle: it is no call the kubelet
// would wait on. A new runtime version is asked again.
func (p *Prober) learnStreams(c *Cycle) {
	if c.SocketReplaced || c.Runtime.Version != "" && c.Runtime.Version != p.lastVersion && p.lastVersion != "" {
		p.streams.forget()
	}
	if c.Runtime.Version != "" {
		p.lastVersion = c.Runtime.Version
	}
	kept := c.Calls[:0]
	for _, r := range c.Calls {
		if r.Method == MethodStreamPodSandboxes || r.Method == MethodStreamContainers {
			switch r.Class {
			case ClassUnimplemented:
				p.streams.v.Store(streamsUnimplemented)
				continue
			case ClassOK, ClassSlow:
				p.streams.v.Store(streamsImplemented)
			}
		}
		kept = append(kept, r)
	}
	c.Calls = kept
	c.Streaming = p.streams.state()
}

func runtimeConditions(resp *runtimeapi.StatusResponse) []RuntimeCondition {
	if resp.Status == nil {
		return nil
	}
	out := make([]RuntimeCondition, 0, len(resp.Status.Conditions))
	for _, c := range resp.Status.Conditions {
		out = append(out, RuntimeCondition{Type: c.Type, Status: c.Status, Required: slices.Contains(RequiredConditions, c.Type),
			Reason: c.Reason, Message: c.Message})
	}
	return out
}

func anyTimeout(rs []CallResult) bool {
	for _, r := range rs {
		if r.Class == ClassTimeout {
			return true
		}
	}
	return false
}

// runtimeInfo is what an answered Version call said.
func runtimeInfo(r CallResult) (RuntimeInfo, bool) {
	resp, ok := r.resp.(*runtimeapi.VersionResponse)
	if !ok {
		return RuntimeInfo{}, false
	}
	return RuntimeInfo{Name: resp.RuntimeName, Version: resp.RuntimeVersion, APIVersion: resp.RuntimeApiVersion}, true
}
