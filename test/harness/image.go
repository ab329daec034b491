package harness

import (
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hangwatch/hangwatch/internal/ociimage"
	"github.com/hangwatch/hangwatch/internal/pins"
)

// PauseImage is the name of the image the harness builds and imports; it is
// both the sandbox image and the image of every test container.
const PauseImage = "hangwatch.local/pause:test"

// BuildPauseImage compiles test/pause as a static binary and writes it as a
// one-layer OCI layout tarball to tarPath.
func BuildPauseImage(tarPath string) error {
	img, err := PauseImageBuilt()
	if err != nil {
		return err
	}
	return ociimage.WriteLayoutTar(tarPath, PauseImage, img)
}

// PauseImageBuilt compiles test/pause as a static binary in a one-layer
// image.
func PauseImageBuilt() (v1.Image, error) {
	dir, err := os.MkdirTemp("", "hw-pause-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "pause")
	if err := GoBuild(ModuleRoot(), bin, "./test/pause", "-ldflags=-s -w"); err != nil {
		return nil, err
	}
	return ociimage.Build(ociimage.Spec{Binary: bin, Name: "pause"})
}

// BuildTags are the build tags every hangwatch binary is built with, as
// hack/lib.sh's build_hangwatch does; internal/pins/pins.env names them
// and says why.
var BuildTags = pins.BuildTags

// BuildGCFlags are the compiler flags of every binary the scripts and the
// harness build to run (hack/lib.sh's BUILD_GCFLAGS): no DWARF.
var BuildGCFlags = pins.BuildGCFlags

// ModuleRoot is the repository root, found from this file's location.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}
