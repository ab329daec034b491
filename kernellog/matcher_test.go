package kernellog

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func loadNPD(t testing.TB) *RuleSet {
	t.Helper()
	rs, err := LoadRuleSet("testdata/npd-kernel-monitor.json")
	if err != nil {
		t.Fatalf("node-problem-detector's kernel-monitor.json must load unchanged: %v", err)
	}
	return rs
}

// reasonsPerLine replays a file and returns, per message, the reasons that
// matched it (sorted).
func reasonsPerLine(t *testing.T, set *RuleSet, path string) map[string][]string {
	t.Helper()
	m, err := NewMatcher(set)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	if _, err := Replay(f, func(r Record) {
		m.Feed(r.Message, func(h Hit) { out[r.Message] = append(out[r.Message], h.Rule.Reason) })
	}); err != nil {
		t.Fatal(err)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func TestDefaultRulesOnTheCorpus(t *testing.T) {
	got := reasonsPerLine(t, DefaultRuleSet(), "testdata/kernel-corpus.log")
	want := map[string][]string{
		"INFO: task containerd:1234 blocked for more than 120 seconds.":          {"ContainerRuntimeTaskBlocked", "TaskHung"},
		"INFO: task containerd-shim:5678 blocked for more than 120 seconds.":     {"ContainerRuntimeTaskBlocked", "TaskHung"},
		"INFO: task runc:[2:INIT]:9012 blocked for more than 120 seconds.":       {"ContainerRuntimeTaskBlocked", "TaskHung"},
		"INFO: task kubelet:812 blocked for more than 122 seconds.":              {"KubeletTaskBlocked", "TaskHung"},
		"INFO: task jbd2/sda4-8:345 blocked for more than 120 seconds.":          {"FilesystemJournalBlocked", "TaskHung"},
		"INFO: task dockerd:3946 blocked for more than 120 seconds.":             {"ContainerRuntimeTaskBlocked", "TaskHung"},
		"INFO: task kswapd0:49 blocked for more than 120 seconds.":               {"TaskHung"},
		"INFO: task kworker/u16:3:221 blocked for more than 245 seconds.":        {"TaskHung"},
		"INFO: task docker:2345 blocked for more than 120 seconds.":              {"ContainerRuntimeTaskBlocked", "TaskHung"},
		"watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [containerd:2112]":    {"SoftLockup"},
		"rcu: INFO: rcu_sched self-detected stall on CPU":                        {"RCUStall"},
		"rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:":                  {"RCUStall"},
		"unregister_netdevice: waiting for eth0 to become free. Usage count = 1": {"UnregisterNetDevice"},
		"Memory cgroup out of memory: Killed process 28417 (stress) total-vm:262144kB, anon-rss:256512kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:560kB oom_score_adj:999": {"OOMKilling"},
		"Out of memory: Killed process 1311 (java) total-vm:7421420kB, anon-rss:3502428kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:7304kB oom_score_adj:0":                 {"OOMKilling"},
		"EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0":                                                                        {"Ext4Error"},
		"XFS (dm-0): Corruption detected. Unmount and run xfs_repair":                                                                                                             {"XfsError"},
		"XFS (sdb1): Log I/O Error Detected. Shutting down filesystem":                                                                                                            {"XfsError"},
		"nfs: server 10.36.3.5 not responding, still trying":                                                                                                                      {"NFSServerNotResponding"},
		"Buffer I/O error on dev sdb1, logical block 0, async page read":                                                                                                          {"IOError"},
		"blk_update_request: I/O error, dev sdb, sector 2048 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0":                                                                     {"IOError"},
		"BUG: unable to handle kernel NULL pointer dereference at 0000000000000010":                                                                                               {"KernelOops"},
		"BUG: kernel NULL pointer dereference, address: 0000000000000008":                                                                                                         {"KernelOops"},
		"Oops: 0000 [#1] SMP PTI":       {"KernelOops"},
		"kernel BUG at mm/slub.c:3952!": {"KernelOops"},
		"general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP NOPTI": {"KernelOops"},
	}
	if !reflect.DeepEqual(got, want) {
		for line, reasons := range got {
			if !reflect.DeepEqual(reasons, want[line]) {
				t.Errorf("%q: matched %v, want %v", line, reasons, want[line])
			}
		}
		for line, reasons := range want {
			if _, ok := got[line]; !ok {
				t.Errorf("%q: matched nothing, want %v", line, reasons)
			}
		}
	}
}

// TestNPDRulesKeepTheirSemantics: node-problem-detector's own rules, loaded
// unchanged, match the corpus as NPD does: only a task named exactly
// "docker" is DockerHung; other hung tasks are TaskHung events.
func TestNPDRulesKeepTheirSemantics(t *testing.T) {
	set := loadNPD(t)
	if len(set.Rules) != 14 || len(set.Conditions) != 3 {
		t.Fatalf("%d rules, %d conditions; want 14 and 3", len(set.Rules), len(set.Conditions))
	}
	got := reasonsPerLine(t, set, "testdata/kernel-corpus.log")
	checks := map[string][]string{
		"INFO: task docker:2345 blocked for more than 120 seconds.":                                        {"DockerHung", "TaskHung"},
		"INFO: task containerd:1234 blocked for more than 120 seconds.":                                    {"TaskHung"},
		"INFO: task runc:[2:INIT]:9012 blocked for more than 120 seconds.":                                 {"TaskHung"},
		"XFS (sdb1): Log I/O Error Detected. Shutting down filesystem":                                     {"XfsHasShutdown"},
		"EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0": {"Ext4Error"},
		"BUG: unable to handle kernel NULL pointer dereference at 0000000000000010":                        {"KernelOops"},
		"Buffer I/O error on dev sdb1, logical block 0, async page read":                                   {"IOError"},
	}
	for line, want := range checks {
		if !reflect.DeepEqual(got[line], want) {
			t.Errorf("%q: matched %v, want %v", line, got[line], want)
		}
	}
	// The prefilter never changes what matches: compare with every regexp
	// run on the joined buffer, as NPD does.
	if naive := naiveNPD(t, set, "testdata/kernel-corpus.log"); !reflect.DeepEqual(got, naive) {
		t.Fatalf("prefiltered matches %v\ndiffer from NPD's way %v", got, naive)
	}
}

// naiveNPD matches the way node-problem-detector does: every rule, pattern
// + `\z`, against the joined buffer of the last bufferSize lines.
func naiveNPD(t *testing.T, set *RuleSet, path string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf []string
	out := map[string][]string{}
	if _, err := Replay(strings.NewReader(string(data)), func(r Record) {
		buf = append(buf, r.Message)
		if len(buf) > set.BufferSize {
			buf = buf[1:]
		}
		joined := strings.Join(buf, "\n")
		for _, rule := range set.Rules {
			if regexp.MustCompile(rule.Pattern + `\z`).MatchString(joined) {
				out[r.Message] = append(out[r.Message], rule.Reason)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func TestMultiLinePatternMatchesTheBuffer(t *testing.T) {
	set, err := ParseRuleSet([]byte(`{"source": "t", "bufferSize": 3, "conditions": [],
	  "rules": [{"type": "temporary", "reason": "TwoLines", "pattern": "first marker\\n.*\\nthird marker"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMatcher(set)
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	for _, line := range []string{"first marker", "anything", "third marker", "third marker"} {
		m.Feed(line, func(h Hit) { hits = append(hits, h.Text) })
	}
	if want := []string{"first marker\nanything\nthird marker"}; !reflect.DeepEqual(hits, want) {
		t.Fatalf("hits = %q, want %q", hits, want)
	}
}

func TestPatternMustReachTheEndOfTheLine(t *testing.T) {
	set := loadNPD(t)
	m, err := NewMatcher(set)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	m.Feed("INFO: task docker:1 blocked for more than 120 seconds. and more text", func(Hit) { n++ })
	if n != 0 {
		t.Fatalf("%d hits: NPD anchors patterns at the end (\\z), so trailing text must not match", n)
	}
}
