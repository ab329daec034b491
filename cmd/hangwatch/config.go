package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/conditions"
)

// Config file identity.
const (
	configAPIVersion = "hangwatch.io/v1alpha1"
	configKind       = "HangwatchConfiguration"
)

// configFile is the --config file. Flags given on the command line
// override it.
type configFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Conditions replace built-in rules of the same type, add new condition
	// types, or drop built-in ones (disabled: true).
	Conditions []conditions.Spec `json:"conditions,omitempty"`
}

// loadConfig reads and checks the config file, reporting every problem at
// once with its field path.
func loadConfig(path string) (*configFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fieldError("--config", path, err.Error())
	}
	var c configFile
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(raw), &c); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	var errs []error
	if c.APIVersion != configAPIVersion {
		errs = append(errs, fmt.Errorf("apiVersion: %q must be %s", c.APIVersion, configAPIVersion))
	}
	if c.Kind != configKind {
		errs = append(errs, fmt.Errorf("kind: %q must be %s", c.Kind, configKind))
	}
	if err := conditions.CompileSpecs(c.Conditions); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("--config %s:\n%w", path, errors.Join(errs...))
	}
	return &c, nil
}
