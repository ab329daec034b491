//go:build tools

// Package crio pins CRI-O's module so that hack/lib.sh can build its
// daemon: go build github.com/cri-o/cri-o/cmd/crio.
package crio

import _ "github.com/cri-o/cri-o/cmd/crio"
