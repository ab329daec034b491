package agent

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestASilencedReasonIsOffAfterAReload: a kernel rule's reason and a
// condition rule's reason, each True, are silenced by an edit of the file
// (no restart): each condition goes False; taken out of the list again,
// the kernel one, whose rule is still active, is True again.
func TestASilencedReasonIsOffAfterAReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(silenced string) {
		body := "apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nserver:\n  listenAddress: 127.0.0.1:0\n" +
			"kubelet:\n  healthzURL: \"\"\nsilencedReasons: [" + silenced + "]\n"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	p := startReloading(t, path, make(chan os.Signal, 1))
	p.stepUntil(t, "RuntimeHung=False", func() bool { return p.onNode(t, "RuntimeHung") == corev1.ConditionFalse })
	p.kmsg.lines <- "INFO: task containerd:7 blocked for more than 120 seconds."
	p.stepUntil(t, "KernelDeadlock=True", func() bool { return p.onNode(t, "KernelDeadlock") == corev1.ConditionTrue })
	p.runtime.frozen.Store(true)
	p.stepUntil(t, "RuntimeHung=True", func() bool { return p.onNode(t, "RuntimeHung") == corev1.ConditionTrue })

	write("ContainerRuntimeTaskBlocked, VersionHung, ListPodSandboxHung, RuntimeNotResponding")
	p.stepUntil(t, "KernelDeadlock=False, with its healthy message, once its reason is silenced", func() bool {
		p.idleTick()
		return p.onNode(t, "KernelDeadlock") == corev1.ConditionFalse && p.messageOnNode(t, "KernelDeadlock") == "kernel has no deadlock"
	})
	p.stepUntil(t, "RuntimeHung=False once its reasons are silenced", func() bool {
		return p.onNode(t, "RuntimeHung") == corev1.ConditionFalse
	})
	write("")
	p.stepUntil(t, "KernelDeadlock=True again once the reason is heard again", func() bool {
		p.idleTick()
		return p.onNode(t, "KernelDeadlock") == corev1.ConditionTrue
	})
}

// idleTick hands the scripted kernel log a line no rule matches: its
// reader's idle tick follows it, as the real one's comes every 500ms.
func (p *inProcess) idleTick() {
	select {
	case p.kmsg.lines <- "nothing to see":
	default:
	}
}
