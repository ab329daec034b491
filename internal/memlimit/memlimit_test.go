package memlimit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layout writes files (path under root: content) and returns Files over
// them, with self as /proc/self/cgroup.
func layout(t *testing.T, self string, files map[string]string) Files {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	selfFile := filepath.Join(t.TempDir(), "cgroup")
	if err := os.WriteFile(selfFile, []byte(self), 0o644); err != nil {
		t.Fatal(err)
	}
	return Files{Root: root, Self: selfFile}
}

func TestReadFindsTheLimit(t *testing.T) {
	const mi128, mi256 = 128 << 20, 256 << 20
	for _, c := range []struct {
		name, self string
		files      map[string]string
		want       int64 // 0: none
		file       string
	}{
		{"v2 container (cgroup namespace)", "0::/\n", map[string]string{"memory.max": "134217728\n"}, mi128, "memory.max"},
		{"v2 no limit", "0::/\n", map[string]string{"memory.max": "max\n"}, 0, ""},
		{"v2 service on a host: the lowest of it and its ancestors", "0::/system.slice/hw.service\n",
			map[string]string{"system.slice/hw.service/memory.max": "max\n", "system.slice/memory.max": "268435456\n"}, mi256, "system.slice/memory.max"},
		{"v1 container: its cgroup at the mount's top, its path not there",
			"12:memory:/kubepods/burstable/pod1/abc\n4:cpu,cpuacct:/kubepods\n0::/\n",
			map[string]string{"memory/memory.limit_in_bytes": "134217728\n"}, mi128, "memory/memory.limit_in_bytes"},
		{"v1 on a host: the process's cgroup under an unlimited root", "4:memory:/hwtest\n0::/\n",
			map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n", "memory/hwtest/memory.limit_in_bytes": "134217728\n"},
			mi128, "memory/hwtest/memory.limit_in_bytes"},
		{"hybrid: v2 mounted without controllers, the v1 limit counts", "4:memory:/a\n0::/a\n",
			map[string]string{"unified/a/cgroup.procs": "", "memory/a/memory.limit_in_bytes": "268435456"}, mi256, "memory/a/memory.limit_in_bytes"},
		{"nothing mounted", "0::/\n", nil, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := layout(t, c.self, c.files)
			lim, ok, err := f.Read()
			if err != nil {
				t.Fatal(err)
			}
			if c.want == 0 {
				if ok {
					t.Fatalf("limit %+v, want none", lim)
				}
				return
			}
			if !ok || lim.Bytes != c.want || lim.File != filepath.Join(f.Root, c.file) {
				t.Fatalf("limit %+v (ok %v), want %d from %s", lim, ok, c.want, c.file)
			}
		})
	}
}

func TestReadWithoutProcSelfCgroupLooksAtTheTop(t *testing.T) {
	f := layout(t, "", map[string]string{"memory.max": "134217728"})
	f.Self = filepath.Join(f.Root, "no-such-file")
	if lim, ok, err := f.Read(); err != nil || !ok || lim.Bytes != 128<<20 {
		t.Fatalf("Read = %+v, %v, %v; want the top's 128 MiB", lim, ok, err)
	}
}

func TestReadNamesABadFile(t *testing.T) {
	f := layout(t, "0::/\n", map[string]string{"memory.max": "12 MiB\n"})
	_, _, err := f.Read()
	if err == nil || !strings.Contains(err.Error(), filepath.Join(f.Root, "memory.max")) || !strings.Contains(err.Error(), `"12 MiB"`) {
		t.Fatalf("err = %v, want the file and its content named", err)
	}
}

func TestParseCgroupsStaysUnderTheMount(t *testing.T) {
	v2, v1 := ParseCgroups([]byte("5:memory,other:/../../x\n0::/../../../etc\nbad line\n"))
	if v2 != "/etc" || v1 != "/x" {
		t.Fatalf("paths %q, %q; want them clean and absolute", v2, v1)
	}
}

func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"134217728\n", "max\n", "9223372036854771712", "0", "-1", " 42 ", "18446744073709551616"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok, err := ParseLimit(b)
		if err == nil && ok && (v <= 0 || v >= Unlimited) {
			t.Fatalf("ParseLimit(%q) = %d, a limit out of range", b, v)
		}
		if !ok && v != 0 {
			t.Fatalf("ParseLimit(%q) = %d with no limit", b, v)
		}
	})
}

func FuzzParseCgroups(f *testing.F) {
	for _, s := range []string{"12:memory:/kubepods/a\n0::/\n", "0::/../x", "4:cpu,memory:\n", ":::", "0::"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v2, v1 := ParseCgroups(b)
		for _, p := range []string{v2, v1} {
			if !strings.HasPrefix(p, "/") || filepath.Clean(p) != p || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
				t.Fatalf("ParseCgroups(%q) gave %q: not a clean absolute path", b, p)
			}
		}
	})
}
