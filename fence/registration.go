package fence

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// DefaultCallTimeout bounds each CSI or plugin registration call when
// Mounts.CallTimeout is zero.
const DefaultCallTimeout = 10 * time.Second

// csiEndpoints are the CSI node plugins' sockets the kubelet was told of,
// by driver name, and what could not be asked.
type csiEndpoints struct {
	byDriver map[string]string
	failed   []string // "<registration socket>: <why>"
}

// String says what registration answered, for an error's message.
func (e csiEndpoints) String() string {
	s := fmt.Sprintf("%d CSI drivers registered", len(e.byDriver))
	if len(e.failed) > 0 {
		s += "; unanswered: " + strings.Join(e.failed, "; ")
	}
	return s
}

// registeredCSI finds the CSI node plugins' sockets as the kubelet does.
// The kubelet's plugin watcher (pkg/kubelet/pluginmanager/pluginwatcher,
// plugin_watcher.go, read at v1.35-v1.37) walks KubeletRoot/plugins_registry
// and every directory below it for Unix sockets whose names do not start
// with "."; for each it calls the registration service's GetInfo
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1), and a plugin of type
// CSIPlugin is then reached at the Endpoint it answered, under the Name it
// answered. Every socket is asked at once, each within the call timeout;
// one that does not answer is listed in failed.
func (m Mounts) registeredCSI(ctx context.Context) csiEndpoints {
	out := csiEndpoints{byDriver: map[string]string{}}
	socks, err := registrationSockets(filepath.Join(m.KubeletRoot, "plugins_registry"))
	if err != nil {
		out.failed = append(out.failed, err.Error())
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, sock := range socks {
		wg.Go(func() {
			info, err := m.getInfo(ctx, sock)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				out.failed = append(out.failed, fmt.Sprintf("%s: %v", sock, err))
			case info.GetType() == registerapi.CSIPlugin && info.GetName() != "" && info.GetEndpoint() != "":
				out.byDriver[info.GetName()] = info.GetEndpoint()
			}
		})
	}
	wg.Wait()
	return out
}

// registrationSockets lists the sockets under dir the kubelet's plugin
// watcher would take: at any depth, names not starting with ".". An
// absent dir has none.
func registrationSockets(dir string) ([]string, error) {
	var socks []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && path == dir && os.IsNotExist(err):
			return fs.SkipAll
		case err != nil:
			return fmt.Errorf("plugin registration directory %s: %w", path, err)
		case path != dir && strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.Type() == fs.ModeSocket:
			socks = append(socks, path)
		}
		return nil
	})
	return socks, err
}

// getInfo asks one registration socket what plugin it registers.
func (m Mounts) getInfo(ctx context.Context, sock string) (*registerapi.PluginInfo, error) {
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, m.callTimeout())
	defer cancel()
	info, err := registerapi.NewRegistrationClient(conn).GetInfo(cctx, &registerapi.InfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("GetInfo: %w", err)
	}
	return info, nil
}

// nodeSocket is driver's node plugin socket: the endpoint its registration
// answered when that is a socket here, else the conventional
// KubeletRoot/plugins/<driver>/csi.sock, else "".
func (m Mounts) nodeSocket(eps csiEndpoints, driver string) string {
	if ep, ok := eps.byDriver[driver]; ok {
		if isSocket(ep) {
			return ep
		}
		klog.InfoS("Fence: the CSI driver's registered endpoint is not a socket here", "driver", driver, "endpoint", ep)
	}
	if sock := filepath.Join(m.KubeletRoot, "plugins", driver, "csi.sock"); isSocket(sock) {
		return sock
	}
	return ""
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Type() == fs.ModeSocket
}

func (m Mounts) callTimeout() time.Duration {
	if m.CallTimeout > 0 {
		return m.CallTimeout
	}
	return DefaultCallTimeout
}
