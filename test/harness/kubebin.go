package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hangwatch/hangwatch/internal/pins"
)

// KubeVersion is the Kubernetes release the harness runs by default:
// internal/pins/pins.env names it, hack/kube/<version>/go.mod pins its
// modules and the setup command builds it.
// $HANGWATCH_KUBE_VERSION (hack/e2e.sh sets it) picks another one built
// into the cache.
var KubeVersion = kubeVersion()

func kubeVersion() string {
	if v := os.Getenv("HANGWATCH_KUBE_VERSION"); v != "" {
		return v
	}
	return pins.KubeVersion
}

// KubeBinary finds a Kubernetes binary built by the setup command:
// $HANGWATCH_KUBE_BIN, else $HANGWATCH_CACHE/kube-<version>, else
// ~/.cache/hangwatch/kube-<version>.
//
// $HANGWATCH_KUBELET_BIN names a kubelet of another release (hack/e2e.sh's
// matrix runs kubelets 1.35-1.37 against the same control plane, within
// the supported version skew).
func KubeBinary(name string) (string, error) {
	if p := os.Getenv("HANGWATCH_KUBELET_BIN"); name == "kubelet" && p != "" {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("HANGWATCH_KUBE_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("HANGWATCH_CACHE"); d != "" {
		dirs = append(dirs, filepath.Join(d, "kube-"+KubeVersion))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "hangwatch", "kube-"+KubeVersion))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s %s not built (the README's test command builds it into the cache); looked in %v", name, KubeVersion, dirs)
}

// KubeletVersion is the version of the kubelet KubeBinary finds, as its
// --version prints it: KubeVersion unless $HANGWATCH_KUBELET_BIN names a
// kubelet of another release.
func KubeletVersion() (string, error) {
	bin, err := KubeBinary("kubelet")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	f := strings.Fields(string(out)) // "Kubernetes v1.36.3"
	if len(f) != 2 {
		return "", fmt.Errorf("%s --version said %q", bin, out)
	}
	return f[1], nil
}

// Promtool finds Prometheus' promtool built by the setup command from the
// Go module pinned in hack/tools.
func Promtool() (string, error) { return CachedTool("promtool", "HANGWATCH_PROMTOOL", "hack/tools") }

// Helm finds helm built by the setup command from the Go module pinned in
// hack/helm.
func Helm() (string, error) { return CachedTool("helm", "HANGWATCH_HELM", "hack/helm") }

// CachedTool finds a tool the setup command built into the cache: $env,
// else $HANGWATCH_CACHE/bin/<name>, else ~/.cache/hangwatch/bin/<name>.
func CachedTool(name, env, pinnedIn string) (string, error) {
	var paths []string
	if p := os.Getenv(env); p != "" {
		paths = append(paths, p)
	}
	if d := os.Getenv("HANGWATCH_CACHE"); d != "" {
		paths = append(paths, filepath.Join(d, "bin", name))
	}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".cache", "hangwatch", "bin", name))
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not built (the README's test command builds it from %s into the cache); looked in %v", name, pinnedIn, paths)
}
