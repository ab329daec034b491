package kubeletmetrics

import (
	"os"
	"testing"
)

func readAll(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
