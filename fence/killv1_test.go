package fence

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeV1 is a fake v1 freezer cgroup of a pod (pids 11, 12) with a container
// below it (pid 13), and a fake proc where they all sleep (S).
type fakeV1 struct {
	dir, proc string
	sig       *signals
	w         *writes
}

func newFakeV1(t *testing.T) *fakeV1 {
	root := t.TempDir()
	f := &fakeV1{
		dir:  filepath.Join(root, "freezer", "kubepods", "pod"+uidA),
		proc: filepath.Join(root, "proc"),
		sig:  &signals{},
		w:    &writes{t: t},
	}
	fakeCgroup(t, f.dir, []int{11, 12}, map[string]string{"freezer.state": "THAWED"})
	fakeCgroup(t, filepath.Join(f.dir, "c1"), []int{13}, map[string]string{"freezer.state": "THAWED"})
	for _, pid := range []int{11, 12, 13} {
		fakeStat(t, f.proc, pid, "sleep) (x", 'S') // a name with parentheses
	}
	return f
}

func (f *fakeV1) killer() Killer {
	return Killer{H: Hierarchy{Root: filepath.Dir(filepath.Dir(filepath.Dir(f.dir)))},
		Proc: f.proc, Signal: f.sig.send, Poll: time.Millisecond, afterWrite: f.w.after}
}

func TestKillV1(t *testing.T) {
	f := newFakeV1(t)
	f.sig.onSignal = func(pid int) error {
		emptyProcs(t, f.dir) // the kernel, once the kills are delivered
		if pid == 12 {
			return unix.ESRCH // exited on its own meanwhile
		}
		return nil
	}
	killed, err := f.killer().Kill(context.Background(), f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{11, 13}; !reflect.DeepEqual(killed, want) {
		t.Errorf("killed %v, want %v", killed, want)
	}
	if got, want := f.sig.sent(), []int{11, 12, 13}; !reflect.DeepEqual(got, want) {
		t.Errorf("signalled %v, want %v", got, want)
	}
	if want := []string{"freezer.state=FROZEN", "freezer.state=THAWED"}; !reflect.DeepEqual(f.w.log, want) {
		t.Errorf("writes %v, want %v", f.w.log, want)
	}
}

func TestKillV1RefusesDState(t *testing.T) {
	for _, thread := range []bool{false, true} {
		f := newFakeV1(t)
		if thread {
			fakeStat(t, filepath.Join(f.proc, "13", "task"), 13, "sleep", 'S')
			fakeStat(t, filepath.Join(f.proc, "13", "task"), 14, "writer", 'D')
		} else {
			fakeStat(t, f.proc, 12, "nfs-writer", 'D')
		}
		killed, err := f.killer().Kill(context.Background(), f.dir)
		if !errors.Is(err, ErrImpossible) {
			t.Fatalf("thread %v: Kill error = %v; want ErrImpossible", thread, err)
		}
		want := "pid 12 (nfs-writer)"
		if thread {
			want = "pid 13 (sleep) (x), thread 14 (writer)"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("thread %v: error %q does not name %q", thread, err, want)
		}
		if len(killed) != 0 || len(f.sig.sent()) != 0 || len(f.w.log) != 0 {
			t.Errorf("thread %v: killed %v, signalled %v, wrote %v; want nothing done", thread, killed, f.sig.sent(), f.w.log)
		}
		if got := readTestFile(t, filepath.Join(f.dir, "freezer.state")); got != "THAWED" {
			t.Errorf("thread %v: freezer.state = %q, want it untouched", thread, got)
		}
	}
}

func TestKillV1NeverEmpties(t *testing.T) {
	f := newFakeV1(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	killed, err := f.killer().Kill(ctx, f.dir)
	if !errors.Is(err, ErrImpossible) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Kill error = %v; want ErrImpossible and deadline exceeded", err)
	}
	for _, want := range []string{"3 processes remain", "11 (sleep) (x, S)", "12 (", "13 ("} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if want := []int{11, 12, 13}; !reflect.DeepEqual(killed, want) {
		t.Errorf("killed %v, want %v", killed, want)
	}
	if n := len(f.sig.sent()); n <= 3 {
		t.Errorf("signalled %d times; want SIGKILL sent again while polling", n)
	}
	if got := readTestFile(t, filepath.Join(f.dir, "freezer.state")); got != "THAWED" {
		t.Errorf("freezer.state = %q, want THAWED", got)
	}
}

func TestKillV1CancelledIsNotImpossible(t *testing.T) {
	f := newFakeV1(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.sig.onSignal = func(int) error { cancel(); return nil }
	_, err := f.killer().Kill(ctx, f.dir)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrImpossible) {
		t.Fatalf("Kill error = %v; want cancelled, not ErrImpossible", err)
	}
}

func TestKillV1StuckFreezing(t *testing.T) {
	f := newFakeV1(t)
	f.w.react = func(path, value string) {
		if value == "FROZEN" {
			writeTestFile(t, path, "FREEZING") // a task that will not freeze
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	killed, err := f.killer().Kill(ctx, f.dir)
	if !errors.Is(err, ErrImpossible) || !strings.Contains(err.Error(), "FREEZING") {
		t.Fatalf("Kill error = %v; want ErrImpossible saying FREEZING", err)
	}
	if len(killed) != 0 || len(f.sig.sent()) != 0 {
		t.Errorf("killed %v, signalled %v; want none", killed, f.sig.sent())
	}
	if got := readTestFile(t, filepath.Join(f.dir, "freezer.state")); got != "THAWED" {
		t.Errorf("freezer.state = %q, want THAWED", got)
	}
}

func TestKillMissingCgroup(t *testing.T) {
	k := Killer{Proc: t.TempDir()}
	_, err := k.Kill(context.Background(), filepath.Join(t.TempDir(), "gone"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Kill(missing dir) error = %v; want not exist", err)
	}
}

func TestKillEmptyCgroup(t *testing.T) {
	f := newFakeV1(t)
	emptyProcs(t, f.dir)
	killed, err := f.killer().Kill(context.Background(), f.dir)
	if err != nil || len(killed) != 0 {
		t.Fatalf("Kill(empty) = %v, %v; want nothing, nil", killed, err)
	}
}

func TestParseStat(t *testing.T) {
	for line, want := range map[string]taskStat{
		"1 (systemd) S 0 1":          {comm: "systemd", state: 'S'},
		"7 (a) b) (c) D 1 2":         {comm: "a) b) (c", state: 'D'},
		"9 (kworker/0:1H-kblockd) I": {comm: "kworker/0:1H-kblockd", state: 'I'},
	} {
		got, err := parseStat(line)
		if err != nil || got != want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v", line, got, err, want)
		}
	}
	for _, bad := range []string{"", "1 systemd S", "1 (x)", "1 (x)   ", "1 )x( S"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) succeeded; want an error", bad)
		}
	}
}
