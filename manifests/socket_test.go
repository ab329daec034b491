package manifests

import (
	"strings"
	"testing"
)

// runtimeSocketDirs are the volumes every pod that talks to the runtime
// mounts, by name: containerd's and CRI-O's socket directories, so that one
// manifest serves either node (hangwatch finds the socket that exists).
var runtimeSocketDirs = map[string]string{
	"runtime-socket-containerd": "/run/containerd",
	"runtime-socket-crio":       "/run/crio",
}

// TestRuntimeSocketDirectoryIsMounted: every pod that talks to the runtime
// mounts the sockets' directories, never a socket file, which a runtime
// restart replaces (the mounted file then points at a dead socket). Each
// directory is DirectoryOrCreate (a node runs one of the runtimes), mounted
// read-only at the same path with HostToContainer. The chart renders the
// overlay's volumes (TestHelmChartMatchesKustomize).
func TestRuntimeSocketDirectoryIsMounted(t *testing.T) {
	for path, podSpec := range map[string][]string{
		"static-pod/hangwatch.yaml":         {"spec"},
		"overlays/daemonset/daemonset.yaml": {"spec", "template", "spec"},
	} {
		spec := dig(readObject(t, path), podSpec...).(map[string]any)
		volumes := map[string]bool{}
		for _, v := range spec["volumes"].([]any) {
			v := v.(map[string]any)
			if p, _ := dig(v, "hostPath", "path").(string); dig(v, "hostPath", "type") == "Socket" || strings.HasSuffix(p, ".sock") {
				t.Errorf("%s: volume %v mounts a socket file", path, v["name"])
			}
			dir, ok := runtimeSocketDirs[v["name"].(string)]
			if !ok {
				continue
			}
			volumes[v["name"].(string)] = true
			if dig(v, "hostPath", "type") != "DirectoryOrCreate" || dig(v, "hostPath", "path") != dir {
				t.Errorf("%s: %s is %v, want the DirectoryOrCreate %s", path, v["name"], v["hostPath"], dir)
			}
		}
		mounts := map[string]bool{}
		for _, m := range dig(spec, "containers").([]any)[0].(map[string]any)["volumeMounts"].([]any) {
			m := m.(map[string]any)
			dir, ok := runtimeSocketDirs[m["name"].(string)]
			if !ok {
				continue
			}
			mounts[m["name"].(string)] = true
			if m["mountPath"] != dir || m["readOnly"] != true || m["mountPropagation"] != "HostToContainer" {
				t.Errorf("%s: %s mounted as %v, want %s read-only with HostToContainer", path, m["name"], m, dir)
			}
		}
		for name := range runtimeSocketDirs {
			if !volumes[name] || !mounts[name] {
				t.Errorf("%s: %s: volume %v, mounted %v; want both", path, name, volumes[name], mounts[name])
			}
		}
	}
}
