package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestImageRunsAsAContainer builds the image with the README's image
// command (no Docker daemon), imports the OCI layout tarball with ctr and
// runs `hangwatch version` in it as a container: non-root by the image's
// default user, read-only root file system.
func TestImageRunsAsAContainer(t *testing.T) {
	c := sharedContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tarPath := filepath.Join(t.TempDir(), "hangwatch-image.tar")
	const ref = "hangwatch.local/hangwatch:image-test"
	cmd := exec.CommandContext(ctx, "bash", "hack/image.sh", "--ref", ref, "--out", tarPath)
	cmd.Dir = harness.ModuleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, out)
	}
	if err := c.ImportImage(ctx, tarPath); err != nil {
		t.Fatal(err)
	}
	code, out, err := c.RunToExit(ctx, ref, []string{"version"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hangwatch version in the container (exit %d): %s", code, out)
	if code != 0 || !strings.HasPrefix(out, "hangwatch v") || strings.Contains(out, "commit unknown") {
		t.Errorf("hangwatch version in the container: exit %d, output %q; want exit 0 and build information", code, out)
	}
	code, out, err = c.RunToExit(ctx, ref, []string{"config", "check", "/dev/null"})
	if err != nil {
		t.Fatal(err)
	}
	if code != 2 || !strings.Contains(out, "apiVersion") {
		t.Errorf("config check of an empty file in the container: exit %d, %q; want 2 naming apiVersion", code, out)
	}
}
