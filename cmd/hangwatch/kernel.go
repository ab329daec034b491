package main

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/kernellog"
)

// kernelWatch follows /dev/kmsg through the kernel rules into conditions
// and events.
type kernelWatch struct {
	kmsg    *kernellog.Kmsg
	monitor *kernellog.Monitor
	metrics *kernellog.Metrics
	last    kernellog.KmsgStats
}

// buildKernelMonitor compiles the rules; each condition change goes to conds.
func buildKernelMonitor(sets []*kernellog.RuleSet, clk clock.Clock, conds func() *conditions.Set,
	events *eventLog, metrics *kernellog.Metrics) (*kernellog.Monitor, error) {
	return kernellog.NewMonitor(sets, clk, kernellog.Options{
		Metrics: metrics,
		OnEvent: events.add,
		OnCondition: func(st kernellog.ConditionState) {
			v := conditions.EvaluateKernel(conditions.KernelObservation{Active: st.Active, Reason: st.Reason, Message: st.Message})
			cond, changed := conds().Update(st.Type, clk.Now(), v)
			if changed {
				klog.InfoS("Condition changed", "type", cond.Type, "status", cond.Status, "reason", cond.Reason, "message", cond.Message)
			}
		},
	})
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
