// Package gpus counts a node's NVIDIA GPUs on the PCI bus and remembers,
// in a file on the node, every one it has seen there, so that a boot that
// finds fewer says which are gone. A GPU that falls off the bus while the
// node runs is the kernel log's to report (Xid 79, the GPU rule pack); one
// that a reboot did not bring back leaves no line at all: the driver never
// sees it. This is the count on the bus, read from sysfs, whether or not
// NVIDIA's driver is loaded yet (the GPU Operator loads it from a pod,
// often after hangwatch has started).
package gpus
