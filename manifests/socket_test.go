package manifests

import (
	"testing"
)

// TestRuntimeSocketDirectoryIsMounted: every pod that talks to the runtime
// mounts the socket's directory, never the socket file, which a runtime
// restart replaces (the mounted file then points at a dead socket). The
// chart renders the overlay's volumes (TestHelmChartMatchesKustomize).
func TestRuntimeSocketDirectoryIsMounted(t *testing.T) {
	for path, podSpec := range map[string][]string{
		"static-pod/hangwatch.yaml":         {"spec"},
		"overlays/daemonset/daemonset.yaml": {"spec", "template", "spec"},
	} {
		spec := dig(readObject(t, path), podSpec...).(map[string]any)
		for _, v := range spec["volumes"].([]any) {
			v := v.(map[string]any)
			if dig(v, "hostPath", "type") == "Socket" {
				t.Errorf("%s: volume %v mounts a socket file", path, v["name"])
			}
			if v["name"] == "runtime-socket" && (dig(v, "hostPath", "type") != "Directory" || dig(v, "hostPath", "path") != "/run/containerd") {
				t.Errorf("%s: runtime-socket is %v, want the Directory /run/containerd", path, v["hostPath"])
			}
		}
		for _, m := range dig(spec, "containers").([]any)[0].(map[string]any)["volumeMounts"].([]any) {
			m := m.(map[string]any)
			if m["name"] == "runtime-socket" && (m["mountPath"] != "/run/containerd" || m["readOnly"] != true || m["mountPropagation"] != "HostToContainer") {
				t.Errorf("%s: runtime-socket mounted as %v, want /run/containerd read-only with HostToContainer", path, m)
			}
		}
	}
}
