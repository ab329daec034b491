package alerting

import (
	"encoding/json"
	"fmt"
	"github.com/hangwatch/hangwatch/test/harness"
	"os"
	"path/filepath"
	"strings"
)

// Dashboard is the part of the shipped Grafana dashboard
// (manifests/grafana/hangwatch-dashboard.json) the tests read: each
// panel's queries.
type Dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// ReadDashboard reads the shipped dashboard.
func ReadDashboard() (Dashboard, error) {
	path := filepath.Join(harness.ModuleRoot(), "manifests", "grafana", "hangwatch-dashboard.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return Dashboard{}, err
	}
	var d Dashboard
	if err := json.NewDecoder(strings.NewReader(string(raw))).Decode(&d); err != nil {
		return Dashboard{}, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	return d, nil
}
