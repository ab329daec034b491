package gpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hangwatch/hangwatch/internal/atomicfile"
)

// Condition is the condition a GPU missing from the bus holds, with
// Reason: the node runs on with fewer GPUs, so new pods go elsewhere and
// those running stay (the shipped remedy policy).
const (
	Condition = "GPUDegraded"
	Reason    = "GPUCountDropped"
)

// Inventory is what the file remembers: every GPU seen on the bus, by PCI
// address ({"gpus": ["0000:3b:00.0", ...]}).
type Inventory struct {
	GPUs []string `json:"gpus"`
}

// maxInventoryBytes bounds the file: 256 GPUs of 12-byte addresses fit
// many times over.
const maxInventoryBytes = 64 << 10

// pciAddress is a PCI function's address as sysfs names it:
// domain:bus:device.function.
var pciAddress = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// ParseInventory reads the file's content; an address that is not one, or
// a repeated one, is refused, naming it.
func ParseInventory(b []byte) (Inventory, error) {
	var inv Inventory
	if len(b) > maxInventoryBytes {
		return inv, fmt.Errorf("%d bytes, more than %d", len(b), maxInventoryBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&inv); err != nil {
		return Inventory{}, fmt.Errorf("not an inventory ({\"gpus\": [PCI addresses]}): %w", err)
	}
	seen := map[string]bool{}
	for i, a := range inv.GPUs {
		if !pciAddress.MatchString(a) {
			return Inventory{}, fmt.Errorf("gpus[%d]: %q is not a PCI address (domain:bus:device.function, lower-case hex)", i, a)
		}
		if seen[a] {
			return Inventory{}, fmt.Errorf("gpus[%d]: %q is listed twice", i, a)
		}
		seen[a] = true
	}
	return inv, nil
}

// Result is one comparison of the bus with the file.
type Result struct {
	Before  []string // the GPUs the file remembered (none: a first start)
	Now     []string // the GPUs on the bus
	Missing []string // remembered, not on the bus now
}

// Check compares the GPUs on the bus now with those the file remembers and
// writes the file again when the bus shows one it did not hold (the file
// then holds both). A GPU missing stays remembered: every later start says
// so until it is back, or until an operator who took it out on purpose
// deletes the file. A file that cannot be read as an inventory is an
// error and is left as it is.
func Check(file string, now []string) (Result, error) {
	res := Result{Now: now}
	b, err := os.ReadFile(file)
	existed := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return res, fmt.Errorf("reading the GPU inventory %s: %w", file, err)
	default:
		inv, err := ParseInventory(b)
		if err != nil {
			return res, fmt.Errorf("the GPU inventory %s (left as it is): %w", file, err)
		}
		res.Before = inv.GPUs
	}
	union := slices.Clone(res.Before)
	for _, g := range now {
		if !slices.Contains(res.Before, g) {
			union = append(union, g)
		}
	}
	for _, g := range res.Before {
		if !slices.Contains(now, g) {
			res.Missing = append(res.Missing, g)
		}
	}
	if existed && len(union) == len(res.Before) {
		return res, nil
	}
	slices.Sort(union)
	return res, write(file, Inventory{GPUs: union})
}

// write replaces the file whole (atomicfile), making its directory.
func write(file string, inv Inventory) error {
	if inv.GPUs == nil {
		inv.GPUs = []string{}
	}
	b, err := json.Marshal(inv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("writing the GPU inventory: %w", err)
	}
	if err := atomicfile.Write(file, append(b, '\n')); err != nil {
		return fmt.Errorf("writing the GPU inventory: %w", err)
	}
	return nil
}

// Message says what a start found missing, for the condition.
func (r Result) Message(file string) string {
	return fmt.Sprintf("%d NVIDIA GPUs on the PCI bus where %d were before; missing: %s (hangwatch's GPU inventory %s: delete it if a GPU was taken out on purpose)",
		len(r.Now), len(r.Before), strings.Join(r.Missing, ", "), file)
}
