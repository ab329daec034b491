package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestImageRunsAsAContainer builds the image with the README's image
// command (no Docker daemon), checks that it is an index for linux/amd64
// and linux/arm64, runs the arm64 binary's `hangwatch version` under
// qemu-user when the machine has it, imports the OCI layout tarball with ctr
// and runs `hangwatch version` in it as a container: non-root by the
// image's default user, read-only root file system.
func TestImageRunsAsAContainer(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c := hangwatch.SharedContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tarPath := filepath.Join(t.TempDir(), "hangwatch-image.tar")
	const ref = "hangwatch.local/hangwatch:image-test"
	cmd := exec.CommandContext(ctx, "bash", "hack/image.sh", "--ref", ref, "--out", tarPath)
	cmd.Dir = harness.ModuleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, out)
	}
	checkImagePlatforms(t, tarPath, "linux/amd64", "linux/arm64")
	runUnderQemu(ctx, t, "qemu-aarch64", filepath.Join(harness.ModuleRoot(), "bin", "linux-arm64", "hangwatch"))
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

// checkImagePlatforms reads the OCI layout tarball's image index and wants
// exactly the given platforms, each an image whose config says the same.
func checkImagePlatforms(t *testing.T, tarPath string, want ...string) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xf", tarPath, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("untar %s: %v: %s", tarPath, err, out)
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil || len(topManifest.Manifests) != 1 {
		t.Fatalf("layout index: %v, %d entries; want one image index", err, len(topManifest.Manifests))
	}
	idx, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatalf("the layout's entry is not an image index: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		p := d.Platform.OS + "/" + d.Platform.Architecture
		if cfg.OS+"/"+cfg.Architecture != p {
			t.Errorf("index says %s, the image's config %s/%s", p, cfg.OS, cfg.Architecture)
		}
		got = append(got, p)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("image platforms %v, want %v", got, want)
	}
}

// runUnderQemu runs a cross-built binary's `version` with qemu-user, when
// the machine has it (Debian's qemu-user; the README's test command
// installs it).
func runUnderQemu(ctx context.Context, t *testing.T, qemu, binary string) {
	t.Helper()
	path, err := exec.LookPath(qemu)
	if err != nil {
		t.Logf("%s not installed: the %s binary is not run", qemu, filepath.Base(filepath.Dir(binary)))
		return
	}
	out, err := exec.CommandContext(ctx, path, binary, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "hangwatch v") {
		t.Fatalf("%s %s version: %v: %s", qemu, binary, err, out)
	}
	t.Logf("%s under %s: %s", binary, qemu, strings.TrimSpace(string(out)))
}
