package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/version"
)

// buildInfo is component-base's version, set at build time with
//
//	-ldflags "-X k8s.io/component-base/version.gitVersion=... -X ...gitCommit=... -X ...buildDate=..."
//
// and filled from the Go build info when the binary was built without them.
func buildInfo() apimachineryversion.Info {
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

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print build information",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildInfo()
			switch output {
			case "json":
				data, _ := json.MarshalIndent(info, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(data))
			case "":
				fmt.Fprintf(cmd.OutOrStdout(), "hangwatch %s (commit %s, built %s, %s, %s)\n",
					info.GitVersion, orUnknown(info.GitCommit), orUnknown(info.BuildDate), info.GoVersion, info.Platform)
			default:
				return fieldError("--output", output, "must be empty or json")
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: empty for one line, or json")
	return cmd
}

func orUnknown(s string) string {
	if s == "" || strings.Contains(s, "$Format") || s == "1970-01-01T00:00:00Z" {
		return "unknown"
	}
	return s
}

// registerBuildInfo exports hangwatch_build_info.
func registerBuildInfo(reg metrics.KubeRegistry) {
	info := buildInfo()
	g := metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name: "hangwatch_build_info", StabilityLevel: metrics.ALPHA,
		Help: "Always 1; its labels tell which hangwatch build is running.",
	}, []string{"version", "git_commit", "go_version"})
	reg.MustRegister(g)
	g.WithLabelValues(info.GitVersion, info.GitCommit, info.GoVersion).Set(1)
}
