//go:build !bench

package harness

const benchTag = false
