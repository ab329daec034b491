// Package pins holds the versions hangwatch's scripts build and its tests
// run, read from pins.env: the one file that names each of them, which
// hack/lib.sh reads too.
package pins

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed pins.env
var file string

// The pins, as pins.env sets them.
var (
	KubeVersion              = mustGet("KUBE_VERSION")
	ContainerdVersion        = mustGet("CONTAINERD_VERSION")
	ContainerdUpgradeVersion = mustGet("CONTAINERD_UPGRADE_VERSION")
	CRIOVersion              = mustGet("CRIO_VERSION")
	CRIORuncVersion          = mustGet("CRIO_RUNC_VERSION")
	CRIOConmonDeb            = mustGet("CRIO_CONMON_DEB")
	GolangciLintVersion      = mustGet("GOLANGCI_LINT_VERSION")
	PrometheusModuleVersion  = mustGet("PROMETHEUS_MODULE_VERSION")
	AlertmanagerVersion      = mustGet("ALERTMANAGER_VERSION")
	HelmModuleVersion        = mustGet("HELM_MODULE_VERSION")
	NPDVersion               = mustGet("NPD_VERSION")
	CSIAttacherVersion       = mustGet("CSI_ATTACHER_VERSION")
	CSIProvisionerVersion    = mustGet("CSI_PROVISIONER_VERSION")
	NHCVersion               = mustGet("NHC_VERSION")
	BuildTags                = mustGet("BUILD_TAGS")
	BuildGCFlags             = mustGet("BUILD_GCFLAGS")
)

// Parse reads KEY=VALUE lines; blank lines and lines that start with #
// are skipped. A key set twice, a line without = or an empty value is an
// error.
func Parse(text string) (map[string]string, error) {
	pins := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || key == "" || value == "" {
			return nil, fmt.Errorf("line %d: %q is not KEY=VALUE", i+1, line)
		}
		if _, dup := pins[key]; dup {
			return nil, fmt.Errorf("line %d: %s set twice", i+1, key)
		}
		pins[key] = value
	}
	return pins, nil
}

// All is every pin of pins.env.
func All() map[string]string {
	pins, err := Parse(file)
	if err != nil {
		panic(fmt.Sprintf("internal/pins/pins.env: %v", err))
	}
	return pins
}

func mustGet(key string) string {
	v, ok := All()[key]
	if !ok {
		panic("internal/pins/pins.env: no " + key)
	}
	return v
}
