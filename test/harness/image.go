package harness

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// PauseImage is the name of the image the harness builds and imports; it is
// both the sandbox image and the image of every test container.
const PauseImage = "hangwatch.local/pause:test"

// BuildPauseImage compiles test/pause as a static binary and writes it as a
// one-layer OCI layout tarball to tarPath.
func BuildPauseImage(tarPath string) error {
	dir, err := os.MkdirTemp("", "hw-pause-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./test/pause")
	cmd.Dir = ModuleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build pause binary: %w: %s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	return writeOCILayout(tarPath, PauseImage, "pause", data)
}

// ModuleRoot is the repository root, found from this file's location.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

type blob struct {
	mediaType string
	data      []byte
}

func (b blob) digest() string {
	sum := sha256.Sum256(b.data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (b blob) descriptor() map[string]any {
	return map[string]any{"mediaType": b.mediaType, "digest": b.digest(), "size": len(b.data)}
}

// writeOCILayout writes an OCI image layout holding one image whose single
// layer is the executable /name, run as the entrypoint.
func writeOCILayout(tarPath, ref, name string, exe []byte) error {
	layerTar, err := tarOf(map[string][]byte{name: exe}, 0o755)
	if err != nil {
		return err
	}
	diffID := sha256.Sum256(layerTar)
	layer := blob{"application/vnd.oci.image.layer.v1.tar+gzip", gzipped(layerTar)}
	config := blob{"application/vnd.oci.image.config.v1+json", mustJSON(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux", "created": time.Unix(0, 0).UTC().Format(time.RFC3339),
		"config": map[string]any{"Entrypoint": []string{"/" + name}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})}
	manifest := blob{"application/vnd.oci.image.manifest.v1+json", mustJSON(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": config.descriptor(), "layers": []any{layer.descriptor()},
	})}
	md := manifest.descriptor()
	md["platform"] = map[string]string{"architecture": runtime.GOARCH, "os": "linux"}
	md["annotations"] = map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref}
	index := mustJSON(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []any{md}})
	files := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`), "index.json": index}
	for _, b := range []blob{layer, config, manifest} {
		files["blobs/sha256/"+b.digest()[len("sha256:"):]] = b.data
	}
	out, err := tarOf(files, 0o644)
	if err != nil {
		return err
	}
	return os.WriteFile(tarPath, out, 0o644)
}

// tarOf packs files (with their parent directories) in a stable order.
func tarOf(files map[string][]byte, mode int64) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, name := range sortedKeys(files) {
		for d := filepath.Dir(name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range sortedKeys(dirs) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	for _, name := range sortedKeys(files) {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(files[name]))}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}

func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return buf.Bytes()
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // only static maps are marshalled
	}
	return data
}
