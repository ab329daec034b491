package kernellog

import (
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// mixedLog returns n kernel log lines: mostly routine messages of the
// shapes a busy node logs (network, cgroup, audit, device, filesystem), with
// about 1 in 100 a problem line from the corpus.
func mixedLog(tb testing.TB, n int) []string {
	tb.Helper()
	data, err := os.ReadFile("testdata/kernel-corpus.log")
	if err != nil {
		tb.Fatal(err)
	}
	var problems []string
	_, _ = Replay(strings.NewReader(string(data)), func(r Record) { problems = append(problems, r.Message) })
	routine := []string{
		"IPv6: ADDRCONF(NETDEV_CHANGE): veth%x: link becomes ready",
		"cni0: port %d(veth%x) entered blocking state",
		"cni0: port %d(veth%x) entered forwarding state",
		"device veth%x entered promiscuous mode",
		"audit: type=1400 audit(1700000000.%d:%d): apparmor=\"STATUS\" operation=\"profile_load\" profile=\"unconfined\" name=\"cri-containerd.apparmor.d\" pid=%d comm=\"apparmor_parser\"",
		"overlayfs: upperdir is in-use as upperdir/workdir of another mount, accessing files from both mounts will result in undefined behavior. %d %d",
		"EXT4-fs (nvme%dn1p1): mounted filesystem with ordered data mode. Opts: (null). Quota mode: none. %d",
		"TCP: request_sock_TCP: Possible SYN flooding on port %d. Sending cookies.  Check SNMP counters. %d",
		"xfs filesystem being mounted at /var/lib/kubelet/pods/%x/volumes supports timestamps until 2038 (0x%x)",
		"IPVS: rr: TCP 10.96.0.%d:443 - no destination available %d",
	}
	rng := rand.New(rand.NewSource(42))
	lines := make([]string, n)
	for i := range lines {
		if rng.Intn(100) == 0 {
			lines[i] = problems[rng.Intn(len(problems))]
			continue
		}
		f := routine[rng.Intn(len(routine))]
		args := []any{rng.Intn(1 << 16), rng.Intn(1 << 20), rng.Intn(1 << 16)}
		lines[i] = fmt.Sprintf(f, args[:strings.Count(f, "%")]...)
	}
	return lines
}

const benchLines = 1_000_000

// BenchmarkMonitor is the daemon's path: one op is one line through the
// whole monitor (prefilter, regexps, rule state, events) over a mixed
// 1M-line log.
func BenchmarkMonitor(b *testing.B) {
	lines := mixedLog(b, benchLines)
	for _, tc := range []struct {
		name string
		sets func() []*RuleSet
	}{
		{"rules=default", func() []*RuleSet { return []*RuleSet{DefaultRuleSet()} }},
		{"rules=default+gpu", func() []*RuleSet { return []*RuleSet{DefaultRuleSet(), gpuPack(b)} }},
		{"rules=npd-14", func() []*RuleSet { return []*RuleSet{loadNPD(b)} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := NewMonitor(tc.sets(), clock.RealClock{}, Options{OnEvent: func(Event) {}})
			if err != nil {
				b.Fatal(err)
			}
			rec := Record{Time: time.Now()}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec.Message = lines[i%benchLines]
				m.Handle(rec)
			}
			reportLinesPerSecond(b)
		})
	}
}

// BenchmarkNPDWay is the baseline: node-problem-detector's matching, every
// rule's pattern + `\z` run on the joined buffer of the last 10 lines, for
// its 14 kernel-monitor rules over the same log.
func BenchmarkNPDWay(b *testing.B) {
	lines := mixedLog(b, benchLines)
	set := loadNPD(b)
	res := make([]*regexp.Regexp, len(set.Rules))
	for i, r := range set.Rules {
		res[i] = regexp.MustCompile(r.Pattern + `\z`)
	}
	buf := make([]string, 0, set.BufferSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(buf) == set.BufferSize {
			buf = buf[1:]
		}
		buf = append(buf, lines[i%benchLines])
		joined := strings.Join(buf, "\n")
		for _, re := range res {
			re.MatchString(joined)
		}
	}
	reportLinesPerSecond(b)
}

func reportLinesPerSecond(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "lines/s")
	}
}
