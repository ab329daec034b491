//go:build !e2e

package harness

const e2eTag = false
