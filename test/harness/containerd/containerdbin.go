package containerd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/hangwatch/hangwatch/internal/pins"
)

// Version is the containerd the harness runs by default:
// internal/pins/pins.env names it, a folder under hack/containerd pins its
// module and the setup command builds it.
var Version = pins.ContainerdVersion

// Binaries are one containerd version's binaries: containerd,
// containerd-shim-runc-v2 and ctr in Dir, or, with Dir empty, the ones on
// PATH (Debian's package, the fallback). runc is Debian's either way.
type Binaries struct {
	Dir     string
	Version string // as `containerd --version` prints it, such as v2.3.7 or 1.6.20~ds1
	Major   int
}

func (b Binaries) path(name string) string {
	if b.Dir == "" {
		return name
	}
	return filepath.Join(b.Dir, name)
}

// env puts Dir first on containerd's PATH, where it looks for its shim.
func (b Binaries) env() []string {
	if b.Dir == "" {
		return nil
	}
	return []string{"PATH=" + b.Dir + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// FindBinaries finds the containerd the tests run:
// $HANGWATCH_CONTAINERD_BIN (the setup command sets it; "debian" means the
// package's), else $HANGWATCH_CACHE or ~/.cache/hangwatch's
// containerd-<Version>, else the one on PATH.
func FindBinaries() (Binaries, error) {
	env := os.Getenv("HANGWATCH_CONTAINERD_BIN")
	if env == "debian" {
		return BinariesIn("")
	}
	var dirs []string
	if env != "" {
		dirs = append(dirs, env)
	}
	if d := os.Getenv("HANGWATCH_CACHE"); d != "" {
		dirs = append(dirs, filepath.Join(d, "containerd-"+Version))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "hangwatch", "containerd-"+Version))
	}
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, "containerd")); err == nil && st.Mode()&0o111 != 0 {
			return BinariesIn(d)
		}
	}
	if env != "" {
		return Binaries{}, fmt.Errorf("no containerd in $HANGWATCH_CONTAINERD_BIN %s", env)
	}
	return BinariesIn("")
}

var containerdVersionRE = regexp.MustCompile(`containerd\S* \S+ v?((\d+)\.\d+\.\S+)`)

// BinariesIn checks that dir (or PATH, for "") holds a complete
// containerd and reads its version.
func BinariesIn(dir string) (Binaries, error) {
	b := Binaries{Dir: dir}
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "ctr"} {
		if _, err := exec.LookPath(b.path(bin)); err != nil {
			return b, fmt.Errorf("%s not found (the README's test command builds containerd %s, or apt-get install containerd): %w", bin, Version, err)
		}
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return b, fmt.Errorf("runc not installed (apt-get install runc containernetworking-plugins): %w", err)
	}
	out, err := exec.Command(b.path("containerd"), "--version").Output()
	if err != nil {
		return b, fmt.Errorf("%s --version: %w", b.path("containerd"), err)
	}
	m := containerdVersionRE.FindStringSubmatch(string(out))
	if m == nil {
		return b, fmt.Errorf("%s --version printed %q, no version in it", b.path("containerd"), out)
	}
	b.Version = m[1]
	b.Major, _ = strconv.Atoi(m[2])
	return b, nil
}

// UpgradeBinaries is the second containerd version the restart
// tests upgrade to in place: $HANGWATCH_CONTAINERD_UPGRADE_BIN (the setup
// command builds it), else $HANGWATCH_CACHE or ~/.cache/hangwatch's
// containerd-<UpgradeVersion>.
func UpgradeBinaries() (Binaries, error) {
	var dirs []string
	if d := os.Getenv("HANGWATCH_CONTAINERD_UPGRADE_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("HANGWATCH_CACHE"); d != "" {
		dirs = append(dirs, filepath.Join(d, "containerd-"+UpgradeVersion))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "hangwatch", "containerd-"+UpgradeVersion))
	}
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, "containerd")); err == nil && st.Mode()&0o111 != 0 {
			return BinariesIn(d)
		}
	}
	return Binaries{}, fmt.Errorf("containerd %s not built (the README's test command builds it); looked in %v", UpgradeVersion, dirs)
}

// UpgradeVersion is the containerd the upgrade test moves to; it
// implements the CRI list streams, so the streaming tests run on it too.
// internal/pins/pins.env names it.
var UpgradeVersion = pins.ContainerdUpgradeVersion
