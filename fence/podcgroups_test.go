package fence

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const (
	uidA = "0a1b2c3d-0000-4000-8000-00000000000a"
	uidB = "0a1b2c3d-0000-4000-8000-00000000000b"
	uidC = "0a1b2c3d-0000-4000-8000-00000000000c"
	uidD = "0a1b2c3d-0000-4000-8000-00000000000d"
	uidE = "0a1b2c3d-0000-4000-8000-00000000000e"
)

func mkdirs(t *testing.T, base string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func testPodCgroups(t *testing.T, h Hierarchy, base string) {
	mkdirs(t, base,
		"kubepods/besteffort/pod"+uidA+"/0123abcd", // cgroupfs, with a container
		"kubepods/besteffort/pod"+uidA+"/pod"+uidE, // inside a pod: not searched
		"other-root/kubepods/pod"+uidA,             // a second kubelet root
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+underscored(uidB)+".slice/cri-containerd-1.scope",
		"a/b/c/d/e/pod"+uidC,                                     // depth 6: found
		"a/b/c/d/e/f/pod"+uidD,                                   // depth 7: too deep
		"kubepods/pod"+uidB+"x",                                  // not quite
		"kubepods.slice/kubepods-pod"+underscored(uidD)+".scope", // not a slice
	)
	writeTestFile(t, filepath.Join(base, "kubepods", "pod"+uidD), "a file, not a cgroup")
	got, err := h.PodCgroups([]string{uidA, uidB, uidC, uidD, uidE, ""})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		uidA: {
			filepath.Join(base, "kubepods/besteffort/pod"+uidA),
			filepath.Join(base, "other-root/kubepods/pod"+uidA),
		},
		uidB: {filepath.Join(base, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+underscored(uidB)+".slice")},
		uidC: {filepath.Join(base, "a/b/c/d/e/pod"+uidC)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PodCgroups =\n%v\nwant\n%v", got, want)
	}
}

func underscored(uid string) string {
	b := []byte(uid)
	for i := range b {
		if b[i] == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

func TestPodCgroupsV1(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "memory/kubepods/besteffort/pod"+uidC) // another controller: not searched
	testPodCgroups(t, Hierarchy{Root: root}, filepath.Join(root, "freezer"))
}

func TestPodCgroupsV2(t *testing.T) {
	root := t.TempDir()
	testPodCgroups(t, Hierarchy{Root: root, V2: true}, root)
}

func TestPodCgroupsNoneWanted(t *testing.T) {
	got, err := Hierarchy{Root: filepath.Join(t.TempDir(), "missing")}.PodCgroups(nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("PodCgroups(nil) = %v, %v; want empty", got, err)
	}
}

func TestPodCgroupsMissingRoot(t *testing.T) {
	_, err := Hierarchy{Root: filepath.Join(t.TempDir(), "missing")}.PodCgroups([]string{uidA})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("PodCgroups on a missing root: %v; want not exist", err)
	}
}
