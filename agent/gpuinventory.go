package agent

import (
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/gpus"
	"github.com/hangwatch/hangwatch/kernellog"
)

// checkGPUInventory compares the NVIDIA GPUs on the PCI bus with those the
// inventory file remembers (kernel.gpuInventoryFile), once, at start: a GPU
// a reboot did not bring back holds GPUDegraded for the boot. A failure is
// logged and checks nothing; the agent runs on.
func (a *Agent) checkGPUInventory() {
	file := a.cfg.Kernel.GPUInventoryFile
	if file == "" {
		return
	}
	dir := a.o.PCIDevicesDir
	if dir == "" {
		dir = gpus.DevicesDir
	}
	now, err := gpus.OnBus(dir)
	if err == nil {
		var res gpus.Result
		if res, err = gpus.Check(file, now); err == nil {
			klog.InfoS("Counted the GPUs on the PCI bus", "gpus", len(now), "remembered", len(res.Before), "missing", res.Missing, "inventory", file)
			if len(res.Missing) == 0 {
				return
			}
			err = a.kernel.Monitor().Raise(kernellog.Finding{Condition: gpus.Condition, Reason: gpus.Reason, Message: res.Message(file)})
		}
	}
	if err != nil {
		klog.ErrorS(err, "The GPU inventory checked nothing", "inventory", file)
	}
}
