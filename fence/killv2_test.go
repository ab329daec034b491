package fence

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// newFakeV2 makes a fake v2 pod cgroup (pids 21, 22) with a container below
// it (pid 23); withKill says whether the kernel has cgroup.kill.
func newFakeV2(t *testing.T, withKill bool) (dir string, k Killer, sig *signals, w *writes) {
	root := t.TempDir()
	dir = filepath.Join(root, "kubepods.slice", "kubepods-pod"+underscored(uidB)+".slice")
	files := map[string]string{"cgroup.freeze": "0", "cgroup.events": "populated 1\nfrozen 0\n"}
	if withKill {
		files["cgroup.kill"] = ""
	}
	fakeCgroup(t, dir, []int{21, 22}, files)
	fakeCgroup(t, filepath.Join(dir, "c1"), []int{23}, nil)
	proc := filepath.Join(root, "proc")
	for _, pid := range []int{21, 22, 23} {
		fakeStat(t, proc, pid, "app", 'S')
	}
	sig, w = &signals{}, &writes{t: t}
	k = Killer{H: Hierarchy{Root: root, V2: true}, Proc: proc, Signal: sig.send, Poll: time.Millisecond, afterWrite: w.after}
	return dir, k, sig, w
}

// freezesOnWrite makes the fake kernel report "frozen 1" once cgroup.freeze
// is 1.
func freezesOnWrite(t *testing.T, dir string) func(path, value string) {
	return func(path, value string) {
		if filepath.Base(path) == "cgroup.freeze" && value == "1" {
			writeTestFile(t, filepath.Join(dir, "cgroup.events"), "populated 1\nfrozen 1\n")
		}
	}
}

func TestKillV2CgroupKill(t *testing.T) {
	dir, k, sig, w := newFakeV2(t, true)
	freeze := freezesOnWrite(t, dir)
	w.react = func(path, value string) {
		freeze(path, value)
		if filepath.Base(path) == "cgroup.kill" {
			emptyProcs(t, dir)
			writeTestFile(t, filepath.Join(dir, "cgroup.events"), "populated 0\nfrozen 1\n")
		}
	}
	killed, err := k.Kill(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{21, 22, 23}; !reflect.DeepEqual(killed, want) {
		t.Errorf("killed %v, want %v", killed, want)
	}
	if len(sig.sent()) != 0 {
		t.Errorf("signalled %v; want cgroup.kill only", sig.sent())
	}
	if want := []string{"cgroup.freeze=1", "cgroup.kill=1", "cgroup.freeze=0"}; !reflect.DeepEqual(w.log, want) {
		t.Errorf("writes %v, want %v", w.log, want)
	}
}

func TestKillV2Signals(t *testing.T) {
	dir, k, sig, w := newFakeV2(t, false)
	w.react = freezesOnWrite(t, dir)
	sig.onSignal = func(int) error {
		emptyProcs(t, dir)
		writeTestFile(t, filepath.Join(dir, "cgroup.events"), "populated 0\nfrozen 1\n")
		return nil
	}
	killed, err := k.Kill(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{21, 22, 23}; !reflect.DeepEqual(killed, want) || !reflect.DeepEqual(sig.sent(), want) {
		t.Errorf("killed %v, signalled %v; want %v", killed, sig.sent(), want)
	}
	if want := []string{"cgroup.freeze=1", "cgroup.freeze=0"}; !reflect.DeepEqual(w.log, want) {
		t.Errorf("writes %v, want %v", w.log, want)
	}
}

func TestKillV2WaitsForPopulated0(t *testing.T) {
	dir, k, _, w := newFakeV2(t, true)
	freeze := freezesOnWrite(t, dir)
	w.react = func(path, value string) {
		freeze(path, value)
		if filepath.Base(path) == "cgroup.kill" {
			emptyProcs(t, dir) // but still "populated 1": a task is exiting
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := k.Kill(ctx, dir)
	if !errors.Is(err, ErrImpossible) {
		t.Fatalf("Kill error = %v; want ErrImpossible", err)
	}
}

func TestKillV2NeverFreezes(t *testing.T) {
	dir, k, sig, _ := newFakeV2(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := k.Kill(ctx, dir)
	if !errors.Is(err, ErrImpossible) {
		t.Fatalf("Kill error = %v; want ErrImpossible", err)
	}
	if got := readTestFile(t, filepath.Join(dir, "cgroup.freeze")); got != "0" {
		t.Errorf("cgroup.freeze = %q, want 0 (thawed)", got)
	}
	if got := readTestFile(t, filepath.Join(dir, "cgroup.kill")); got != "" || len(sig.sent()) != 0 {
		t.Errorf("cgroup.kill = %q, signalled %v; want nothing killed", got, sig.sent())
	}
}
