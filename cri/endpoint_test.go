package cri

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveEndpointOrder(t *testing.T) {
	crictl := writeFile(t, "crictl.yaml", "runtime-endpoint: unix:///crictl.sock\ntimeout: 7\n")
	kubelet := writeFile(t, "config.yaml", "kind: KubeletConfiguration\ncontainerRuntimeEndpoint: /kubelet.sock\n")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "CONTAINER_RUNTIME_ENDPOINT" {
				return v
			}
			return ""
		}
	}
	none := func(string) bool { return false }
	crio := func(p string) bool { return p == "/run/crio/crio.sock" }
	cases := []struct {
		name        string
		o           EndpointOptions
		addr, src   string
		wantTimeout time.Duration
	}{
		{"flag wins", EndpointOptions{Flag: "unix:///flag.sock", Getenv: env("unix:///env.sock"), CrictlConfig: crictl, KubeletConfig: kubelet},
			"unix:///flag.sock", "--runtime-endpoint", 7 * time.Second},
		{"env next", EndpointOptions{Getenv: env("unix:///env.sock"), CrictlConfig: crictl, KubeletConfig: kubelet},
			"unix:///env.sock", "env CONTAINER_RUNTIME_ENDPOINT", 7 * time.Second},
		{"crictl config next", EndpointOptions{Getenv: env(""), CrictlConfig: crictl, KubeletConfig: kubelet, Timeout: time.Second, TimeoutSet: true},
			"unix:///crictl.sock", crictl, time.Second},
		{"kubelet config next, bare path", EndpointOptions{Getenv: env(""), CrictlConfig: missing, KubeletConfig: kubelet},
			"unix:///kubelet.sock", "kubelet config " + kubelet, DefaultTimeout},
		{"first existing default", EndpointOptions{Getenv: env(""), CrictlConfig: missing, KubeletConfig: missing, SocketExists: crio},
			"unix:///run/crio/crio.sock", "default", DefaultTimeout},
		{"no socket at all", EndpointOptions{Getenv: env(""), CrictlConfig: missing, KubeletConfig: missing, SocketExists: none},
			DefaultEndpoints[0], "default (no runtime socket found)", DefaultTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := ResolveEndpoint(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if ep.Address != tc.addr || ep.Source != tc.src || ep.Timeout != tc.wantTimeout {
				t.Fatalf("got %+v (timeout %v), want %s from %s, timeout %v", ep, ep.Timeout, tc.addr, tc.src, tc.wantTimeout)
			}
		})
	}
}

func TestResolveEndpointErrorsNameTheProblem(t *testing.T) {
	bad := writeFile(t, "crictl.yaml", "runtime-endpoint: [not, a, string]\n")
	cases := []struct {
		o    EndpointOptions
		want string
	}{
		{EndpointOptions{CrictlConfig: bad}, "crictl config " + bad},
		{EndpointOptions{Flag: "http://x"}, `"http://x": unsupported scheme`},
		{EndpointOptions{Flag: "unix://relative.sock"}, "want unix:///absolute/path"},
		{EndpointOptions{Flag: "unix:///x.sock", Timeout: -time.Second, TimeoutSet: true}, "--timeout -1s"},
	}
	for _, tc := range cases {
		tc.o.Getenv = func(string) string { return "" }
		if tc.o.CrictlConfig == "" {
			tc.o.CrictlConfig = filepath.Join(t.TempDir(), "none")
		}
		_, err := ResolveEndpoint(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ResolveEndpoint(%+v) error = %v, want it to mention %q", tc.o, err, tc.want)
		}
	}
}
