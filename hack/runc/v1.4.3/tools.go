//go:build tools

// Package runc pins runc's module so that hack/lib.sh can build it:
// go build github.com/opencontainers/runc.
package runc

import _ "github.com/opencontainers/runc"
