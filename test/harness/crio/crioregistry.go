package crio

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/harness"
)

// localRegistryPrefix is the registry name of the harness's images; CRI-O's
// registries.conf sends it to the harness's registry on loopback.
const localRegistryPrefix = "hangwatch.local/"

// serveRegistry starts a registry on loopback for CRI-O's pulls, which
// take images only by registry name (no archive or layout transport); the
// tests reach no registry beyond this machine. It lives as long as the
// CRI-O does.
func serveRegistry() *httptest.Server {
	return httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
}

// registryRef is name (hangwatch.local/...) in the harness's registry.
func (c *CRIO) registryRef(image string) (name.Reference, error) {
	repo, ok := strings.CutPrefix(image, localRegistryPrefix)
	if !ok {
		return nil, fmt.Errorf("image %s: the harness's registry serves %s* only", image, localRegistryPrefix)
	}
	return name.ParseReference(c.registry.Listener.Addr().String()+"/"+repo, name.Insecure)
}

// pushPauseImage builds the pause image and pushes it as PauseImage.
func (c *CRIO) pushPauseImage() error {
	img, err := harness.PauseImageBuilt()
	if err != nil {
		return err
	}
	ref, err := c.registryRef(harness.PauseImage)
	if err != nil {
		return err
	}
	if err := remote.Write(ref, img); err != nil {
		return fmt.Errorf("push %s to the harness's registry: %w", harness.PauseImage, err)
	}
	return nil
}

// ImportImage pushes each image of an OCI layout tarball, by the name its
// index gives it, to the harness's registry, and has CRI-O pull it.
func (c *CRIO) ImportImage(ctx context.Context, tarPath string) error {
	dir, err := os.MkdirTemp("", "hw-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := untar(tarPath, dir); err != nil {
		return err
	}
	names, err := c.pushLayout(layout.Path(dir))
	if err != nil {
		return fmt.Errorf("%s: %w", tarPath, err)
	}
	for _, image := range names {
		if _, err := c.conn.Image.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
			return fmt.Errorf("CRI-O pull %s: %w", image, err)
		}
	}
	return nil
}

// pushLayout pushes every named manifest of the layout and returns the
// names.
func (c *CRIO) pushLayout(p layout.Path) ([]string, error) {
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, desc := range manifest.Manifests {
		image := desc.Annotations["org.opencontainers.image.ref.name"]
		ref, err := c.registryRef(image)
		if err != nil {
			return nil, err
		}
		if desc.MediaType.IsIndex() {
			child, err := idx.ImageIndex(desc.Digest)
			if err == nil {
				err = remote.WriteIndex(ref, child)
			}
			if err != nil {
				return nil, fmt.Errorf("push %s: %w", image, err)
			}
		} else {
			img, err := idx.Image(desc.Digest)
			if err == nil {
				err = remote.Write(ref, img)
			}
			if err != nil {
				return nil, fmt.Errorf("push %s: %w", image, err)
			}
		}
		names = append(names, image)
	}
	if len(names) == 0 {
		return nil, errors.New("no named image in the layout")
	}
	return names, nil
}

// untar extracts a tarball of regular files and directories into dir.
func untar(tarPath, dir string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tarPath, err)
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFileFrom(target, tr)
		}
		if err != nil {
			return err
		}
	}
}

func writeFileFrom(path string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
