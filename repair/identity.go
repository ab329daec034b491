package repair

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// unitName finds the process that answers for the target (the CRI
// socket's listener, the kubelet health port's) in hangwatch's PID
// namespace, and the unit to restart: the configured one, or for the
// runtime the unit of that listener.
func (r *Repairer) unitName(ctx context.Context, m Manager, t Target, sdPID int) (int, string, error) {
	if t == TargetKubelet {
		return 0, r.settings.KubeletUnit, nil // its health port's holder is found once the unit is
	}
	socket := r.runtimeSocket()
	peer, err := PeerPID(socket, systemdTimeout)
	if err == nil && peer == 0 {
		err = setup(fmt.Errorf("the runtime behind %s is outside hangwatch's PID namespace (run with hostPID)", socket))
	}
	if err != nil {
		return 0, "", err
	}
	if r.settings.RuntimeUnit != "" {
		return peer, r.settings.RuntimeUnit, nil
	}
	name, err := r.unitOf(ctx, m, peer, sdPID)
	return peer, name, err
}

// kubeletListener is the process holding the kubelet's health port.
func (r *Repairer) kubeletListener() (int, error) {
	port := r.o.KubeletHealthzPort
	if port == 0 {
		return 0, setup(errors.New("no kubelet health port is probed (kubelet.healthzURL), so no kubelet is restarted"))
	}
	pid, err := r.o.Proc.TCPListener(port)
	if err == nil && pid == 0 {
		err = setup(fmt.Errorf("no process in hangwatch's PID and network namespaces listens on the kubelet's health port %d (run with hostPID and hostNetwork)", port))
	}
	return pid, err
}

// unitOf names the unit of pid (in hangwatch's namespace).
func (r *Repairer) unitOf(ctx context.Context, m Manager, pid, sdPID int) (string, error) {
	nsPID, err := r.o.Proc.ToNamespaceOf(pid, sdPID)
	if err != nil {
		return "", err
	}
	return m.UnitOfPID(ctx, uint32(nsPID))
}

// isTheOneThatHangs checks that killing the unit's main process kills
// what does not answer: for the runtime, the main process is the CRI
// socket's listener (not a supervisor such as k3s or RKE2, or a wrapper
// script, that started the runtime as its child); for the kubelet, the
// health port's holder is the main process or in the kubelet's unit.
func (r *Repairer) isTheOneThatHangs(ctx context.Context, m Manager, t Target, f found, listener, sdPID int) error {
	if t == TargetKubelet {
		var err error
		if listener, err = r.kubeletListener(); err != nil {
			return err
		}
	}
	if listener == f.pid {
		return nil
	}
	if t == TargetKubelet {
		unit, err := r.unitOf(ctx, m, listener, sdPID)
		if err == nil && unit == f.unit.Name {
			return nil
		}
		return setup(fmt.Errorf("the kubelet's health port %d is held by PID %d (unit %q), not by %s (repair.kubeletUnit): it is not the kubelet that would be restarted",
			r.o.KubeletHealthzPort, listener, unit, f.unit.Name))
	}
	return setup(fmt.Errorf("the main process of %s (PID %d) is not the process listening on %s (PID %d): a SIGKILL would kill the unit's main process, not the runtime "+
		"(a runtime started as a child, as by k3s or RKE2, or by a wrapper script); set repair.runtimeUnit to the unit whose main process is the runtime",
		f.unit.Name, f.pid, r.runtimeSocket(), listener))
}

// runtimeSocket is the socket whose listener is the runtime.
func (r *Repairer) runtimeSocket() string {
	if r.settings.RuntimeSocket != "" {
		return r.settings.RuntimeSocket
	}
	return strings.TrimPrefix(r.o.CRISocket, "unix://")
}
