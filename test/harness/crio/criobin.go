package crio

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"github.com/hangwatch/hangwatch/internal/pins"
)

// Version is the CRI-O the harness runs: internal/pins/pins.env names
// it, hack/crio/<version> pins its module and the setup command builds it.
var Version = pins.CRIOVersion

// Binaries are what a CRI-O runs: crio, pinns and runc in Dir (the
// setup command builds them from pinned sources), and conmon.
type Binaries struct {
	Dir     string
	Conmon  string // Debian's conmon package, at the pinned version
	Version string // as `crio --version` prints it, such as 1.36.3
}

func (b Binaries) path(name string) string { return filepath.Join(b.Dir, name) }

// FindBinaries finds the CRI-O the tests run: $HANGWATCH_CRIO_BIN (the
// setup command sets it), else $HANGWATCH_CACHE's or
// ~/.cache/hangwatch's crio-<Version>; conmon on PATH.
func FindBinaries() (Binaries, error) {
	var dirs []string
	if d := os.Getenv("HANGWATCH_CRIO_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("HANGWATCH_CACHE"); d != "" {
		dirs = append(dirs, filepath.Join(d, "crio-"+Version))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "hangwatch", "crio-"+Version))
	}
	for _, d := range dirs {
		if b, err := crioBinariesIn(d); err == nil {
			return b, nil
		}
	}
	return Binaries{}, fmt.Errorf("CRI-O %s not built (the README's test command builds crio, pinns and runc): looked in %v", Version, dirs)
}

var crioVersionRE = regexp.MustCompile(`(?m)^crio version (\S+)`)

// crioBinariesIn checks that dir holds crio, pinns and runc, that conmon
// is installed, and reads crio's version.
func crioBinariesIn(dir string) (Binaries, error) {
	b := Binaries{Dir: dir}
	for _, name := range []string{"crio", "pinns", "runc"} {
		if st, err := os.Stat(b.path(name)); err != nil || st.Mode()&0o111 == 0 {
			return b, fmt.Errorf("no executable %s in %s", name, dir)
		}
	}
	conmon, err := exec.LookPath("conmon")
	if err != nil {
		return b, fmt.Errorf("conmon not installed (the README's test command installs Debian's conmon %s): %w", pins.CRIOConmonDeb, err)
	}
	b.Conmon = conmon
	out, err := exec.Command(b.path("crio"), "--version").Output()
	if err != nil {
		return b, fmt.Errorf("%s --version: %w", b.path("crio"), err)
	}
	m := crioVersionRE.FindSubmatch(out)
	if m == nil {
		return b, fmt.Errorf("%s --version printed %q, no version in it", b.path("crio"), out)
	}
	b.Version = string(m[1])
	return b, nil
}
