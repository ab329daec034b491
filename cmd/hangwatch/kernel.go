package main

import (
	"context"
	"maps"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/kernellog"
)

// kernelWatch follows /dev/kmsg through the kernel rules into conditions
// and events.
type kernelWatch struct {
	kmsg    kernellog.Source
	monitor *kernellog.Monitor
	metrics *kernellog.Metrics
	last    kernellog.KmsgStats
	mu      sync.Mutex
	states  map[string]any // the `kernel` input: condition type to its state
	sink    func(map[string]any)
}

// buildKernelMonitor compiles the rules; each condition change goes to
// onCondition.
func buildKernelMonitor(sets []*kernellog.RuleSet, clk clock.PassiveClock, onCondition func(kernellog.ConditionState),
	events *eventLog, metrics *kernellog.Metrics) (*kernellog.Monitor, error) {
	return kernellog.NewMonitor(sets, clk, kernellog.Options{Metrics: metrics, OnEvent: events.add, OnCondition: onCondition})
}

// observe returns the monitor's condition callback: it keeps the state of
// every kernel condition and hands the whole `kernel` input to sink.
func (k *kernelWatch) observe(sink func(map[string]any)) func(kernellog.ConditionState) {
	k.sink = sink
	return func(st kernellog.ConditionState) {
		k.mu.Lock()
		k.states[st.Type] = kernelFields(st)
		obs := maps.Clone(k.states)
		k.mu.Unlock()
		sink(obs)
	}
}

// observeAll hands on every condition's state, once the lookback is read.
func (k *kernelWatch) observeAll() {
	k.mu.Lock()
	for _, st := range k.monitor.Conditions() {
		k.states[st.Type] = kernelFields(st)
	}
	obs := maps.Clone(k.states)
	k.mu.Unlock()
	k.sink(obs)
}

// kernelFields is one condition of the `kernel` input.
func kernelFields(st kernellog.ConditionState) map[string]any {
	return map[string]any{"active": st.Active, "reason": st.Reason, "message": st.Message, "matches": st.Count}
}

// follow reads records as they are logged until ctx ends.
func (k *kernelWatch) follow(ctx context.Context) {
	err := k.kmsg.Follow(ctx, 500*time.Millisecond, k.monitor.Handle, func() {
		k.monitor.Expire()
		k.exportStats()
	})
	if err != nil {
		klog.ErrorS(err, "Kernel log watch stopped")
	}
}

func (k *kernelWatch) exportStats() {
	s := k.kmsg.Stats()
	k.metrics.Lines.Add(float64(s.Lines - k.last.Lines))
	k.metrics.Lost.Add(float64(s.Lost - k.last.Lost))
	k.metrics.ParseErrors.Add(float64(s.ParseErrors - k.last.ParseErrors))
	k.last = s
}
