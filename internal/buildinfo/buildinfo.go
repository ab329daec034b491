// Package buildinfo says which hangwatch build is running, for `version`
// and the hangwatch_build_info metric.
package buildinfo

import (
	"regexp"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/version"
)

// Get is component-base's version, set at build time with
//
//	-ldflags "-X k8s.io/component-base/version.gitVersion=... -X ...gitCommit=... -X ...buildDate=..."
//
// and filled from the Go build info when the binary was built without them.
func Get() apimachineryversion.Info {
	info := version.Get()
	if !strings.Contains(info.GitVersion, "$Format") && info.GitVersion != "v0.0.0-master" {
		fillMajorMinor(&info)
		return info
	}
	info.GitVersion = "v0.0.0-dev"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.GitVersion = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.GitCommit = s.Value
			}
		}
	}
	if strings.Contains(info.GitCommit, "$Format") {
		info.GitCommit = ""
	}
	fillMajorMinor(&info)
	return info
}

// fillMajorMinor sets major and minor from the semantic version when the
// build did not stamp them: v0.3.1-5-gabc gives "0" and "3".
func fillMajorMinor(info *apimachineryversion.Info) {
	if info.Major != "" && info.Minor != "" {
		return
	}
	m := majorMinor.FindStringSubmatch(info.GitVersion)
	if m == nil {
		return
	}
	info.Major, info.Minor = m[1], m[2]
}

var majorMinor = regexp.MustCompile(`^v(\d+)\.(\d+)`)

// Register exports hangwatch_build_info.
func Register(reg metrics.KubeRegistry) {
	info := Get()
	g := metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name: "hangwatch_build_info", StabilityLevel: metrics.ALPHA,
		Help: "Always 1; its labels tell which hangwatch build is running.",
	}, []string{"version", "git_commit", "go_version"})
	reg.MustRegister(g)
	g.WithLabelValues(info.GitVersion, info.GitCommit, info.GoVersion).Set(1)
}
