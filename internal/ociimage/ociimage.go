// Package ociimage builds small single-binary container images with
// go-containerregistry, without a Docker daemon, and writes them as OCI
// image layout tarballs that `ctr images import` accepts.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec describes an image of one static executable.
type Spec struct {
	// Binary is the executable's path on this machine; it becomes
	// /<Name> in the image and the entrypoint.
	Binary string
	Name   string
	// Cmd is the default argument list after the entrypoint.
	Cmd []string
	// User is the default user, "uid:gid"; empty for root.
	User string
	// Files are extra files by absolute path in the image (0644).
	Files map[string][]byte
	// Executables are more executables, by their path in the image, each
	// read from its path on this machine (0755).
	Executables map[string]string
	// Labels are the image config's labels (org.opencontainers.image.*).
	Labels map[string]string
	// Arch is the binary's GOARCH; empty for this machine's.
	Arch string
}

func (s Spec) arch() string {
	if s.Arch == "" {
		return runtime.GOARCH
	}
	return s.Arch
}

// Build makes the image: one layer holding the executable and the extra
// files, for s.Arch, with reproducible timestamps.
func Build(s Spec) (v1.Image, error) {
	exe, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("image binary: %w", err)
	}
	files := map[string]fileEntry{"/" + s.Name: {exe, 0o755}}
	for p, data := range s.Files {
		files[p] = fileEntry{data, 0o644}
	}
	for p, local := range s.Executables {
		data, err := os.ReadFile(local)
		if err != nil {
			return nil, fmt.Errorf("image executable %s: %w", p, err)
		}
		files[p] = fileEntry{data, 0o755}
	}
	layerTar, err := tarOf(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = s.arch(), "linux"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = []string{"/" + s.Name}
	cfg.Config.Cmd = s.Cmd
	cfg.Config.User = s.User
	cfg.Config.Labels = s.Labels
	return mutate.ConfigFile(img, cfg)
}

// BuildIndex makes a multi-platform image: one image per spec (one per
// architecture), in an OCI image index with each one's platform.
func BuildIndex(specs []Spec) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, s := range specs {
		img, err := Build(s)
		if err != nil {
			return nil, fmt.Errorf("linux/%s: %w", s.arch(), err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: s.arch()}}})
	}
	return idx, nil
}

// WriteLayoutTarIndex writes a multi-platform image as an OCI image layout
// tarball named ref; `ctr images import` unpacks this machine's platform.
func WriteLayoutTarIndex(tarPath, ref string, idx v1.ImageIndex) error {
	return writeLayout(tarPath, func(p layout.Path) error {
		return p.AppendIndex(idx, layout.WithAnnotations(refAnnotations(ref)))
	})
}

func refAnnotations(ref string) map[string]string {
	return map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref}
}

// writeLayout writes an OCI layout with add's content to a tarball.
func writeLayout(tarPath string, add func(layout.Path) error) error {
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	if err := add(p); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	return tarDir(dir, tarPath)
}

// WriteLayoutTar writes img as an OCI image layout tarball named ref (the
// index annotations containerd and other tools read the name from).
func WriteLayoutTar(tarPath, ref string, img v1.Image) error {
	return writeLayout(tarPath, func(p layout.Path) error {
		return p.AppendImage(img, layout.WithAnnotations(refAnnotations(ref)),
			layout.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	})
}

type fileEntry struct {
	data []byte
	mode int64
}

// tarOf packs files, with their parent directories, in a stable order.
func tarOf(files map[string]fileEntry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
		for d := path.Dir(name); d != "/" && d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sort.Strings(names)
	dirNames := make([]string, 0, len(dirs))
	for d := range dirs {
		dirNames = append(dirNames, d)
	}
	sort.Strings(dirNames)
	for _, d := range dirNames {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		f := files[name]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name[1:], Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}

// tarDir writes the files under dir into a tarball at tarPath.
func tarDir(dir, tarPath string) error {
	out, err := os.Create(tarPath)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime = filepath.ToSlash(rel), time.Unix(0, 0)
		if err := tw.WriteHeader(hdr); err != nil || info.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
