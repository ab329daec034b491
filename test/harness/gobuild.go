package harness

import (
	"fmt"
	"os"
	"os/exec"
)

// GoBuild builds the Go package pkg of the module in dir into out as the
// scripts build every binary they run (hack/lib.sh): static, -trimpath
// and BuildGCFlags, with flags (build tags, -ldflags) before the package.
// The same flags as the test command's builds, so their compiles are
// shared.
func GoBuild(dir, out, pkg string, flags ...string) error {
	args := append([]string{"build", "-trimpath", "-gcflags", BuildGCFlags}, flags...)
	cmd := exec.Command("go", append(args, "-o", out, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return nil
}
