package gpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DevicesDir is where sysfs lists the PCI functions, one directory (or
// link) per function named by its address.
const DevicesDir = "/sys/bus/pci/devices"

// nvidiaVendor is NVIDIA's PCI vendor id as sysfs prints it.
const nvidiaVendor = "0x10de"

// displayClass is the PCI base class of display controllers (0x03: VGA
// 0x0300, 3D 0x0302, which data-centre GPUs use). NVIDIA's NVSwitches
// and audio functions are other classes and do not count.
const displayClass = "0x03"

// OnBus lists, sorted, the PCI addresses of the NVIDIA display
// controllers under dir (DevicesDir on a node). A function whose vendor
// or class cannot be read is skipped; an unreadable dir is an error.
func OnBus(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing the PCI devices in %s: %w", dir, err)
	}
	var found []string
	for _, e := range entries {
		vendor, errV := readAttr(filepath.Join(dir, e.Name(), "vendor"))
		class, errC := readAttr(filepath.Join(dir, e.Name(), "class"))
		if errV != nil || errC != nil {
			continue
		}
		if vendor == nvidiaVendor && strings.HasPrefix(class, displayClass) {
			found = append(found, e.Name())
		}
	}
	slices.Sort(found)
	return found, nil
}

// readAttr reads a short sysfs attribute, trimmed.
func readAttr(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if len(b) > 64 {
		return "", errors.New("not a PCI attribute")
	}
	return strings.ToLower(strings.TrimSpace(string(b))), nil
}
