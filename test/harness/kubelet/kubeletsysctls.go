package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// KubeletSysctls are the kernel settings the kubelet's container manager
// sets at its start when they differ (setupKernelTunables, with
// protectKernelDefaults false), under /proc/sys.
var KubeletSysctls = map[string]string{
	"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10", "kernel/panic_on_oops": "1",
	"kernel/keys/root_maxkeys": "1000000", "kernel/keys/root_maxbytes": "25000000",
}

// FreshMachineSysctls are a new machine's values of those the kubelet
// changes there (a machine where no kubelet has run).
var FreshMachineSysctls = map[string]string{"vm/overcommit_memory": "0", "kernel/panic": "0", "kernel/panic_on_oops": "1"}

// ReadSysctls reads the settings under /proc/sys.
func ReadSysctls(names map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for name := range names {
		raw, err := os.ReadFile(filepath.Join("/proc/sys", name))
		if err != nil {
			return nil, fmt.Errorf("read sysctl %s: %w", name, err)
		}
		out[name] = strings.TrimSpace(string(raw))
	}
	return out, nil
}

// WriteSysctls writes each setting under /proc/sys whose value differs.
func WriteSysctls(values map[string]string) error {
	now, err := ReadSysctls(values)
	if err != nil {
		return err
	}
	for name, v := range values {
		if now[name] == v {
			continue
		}
		if err := os.WriteFile(filepath.Join("/proc/sys", name), []byte(v), 0o644); err != nil {
			return fmt.Errorf("write sysctl %s=%s: %w", name, v, err)
		}
	}
	return nil
}

// setKubeletSysctls sets, on the host, what a kubelet under the test's
// systemd cannot: /proc/sys is read-only in that namespace, and on a
// machine where no kubelet has run the kubelet's container manager would
// fail to start ("open /proc/sys/vm/overcommit_memory: read-only file
// system"). They are left set, as a kubelet leaves them on a node (and
// the harness's other kubelets, which run outside that namespace, set
// them themselves).
func setKubeletSysctls() error {
	if err := WriteSysctls(KubeletSysctls); err != nil {
		return fmt.Errorf("the kernel settings the kubelet needs, which it cannot set from systemd's namespace: %w", err)
	}
	return nil
}

// sysctlLock serializes, across the test binaries that run at once, the
// kubelets under a test's systemd (which share the lock: each needs the
// settings to hold for its life, its restarts included) and a test that
// sets a fresh machine's values (which holds it alone). In one process,
// a test holding it alone starts its kubelets without asking again.
var sysctlLock struct {
	mu        sync.Mutex
	exclusive bool
}

func sysctlLockPath() string { return filepath.Join(os.TempDir(), "hangwatch-kubelet-sysctls.lock") }

// lockSysctls takes the lock, shared or alone, and returns its release.
func lockSysctls(exclusive bool) (func(), error) {
	sysctlLock.mu.Lock()
	held := sysctlLock.exclusive
	sysctlLock.mu.Unlock()
	if held && !exclusive {
		return func() {}, nil
	}
	f, err := os.OpenFile(sysctlLockPath(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the kernel settings' lock: %w", err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil { // waits for the other binary's kubelets or test
		_ = f.Close()
		return nil, fmt.Errorf("the kernel settings' lock: %w", err)
	}
	if exclusive {
		sysctlLock.mu.Lock()
		sysctlLock.exclusive = true
		sysctlLock.mu.Unlock()
	}
	return func() {
		if exclusive {
			sysctlLock.mu.Lock()
			sysctlLock.exclusive = false
			sysctlLock.mu.Unlock()
		}
		_ = f.Close() // releases the flock
	}, nil
}
