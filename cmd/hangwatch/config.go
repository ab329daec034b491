package main

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/conditions"
)

// Config file identity.
const (
	configAPIVersion = "hangwatch.io/v1alpha1"
	configKind       = "HangwatchConfiguration"
)

// configFile is the --config file: settings for every `run` flag, and the
// condition rules. Flags given on the command line override it.
type configFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	settings   `json:",inline"`
	// Conditions replace built-in rules of the same type, add new condition
	// types, or drop built-in ones (disabled: true).
	Conditions []conditions.Spec `json:"conditions,omitempty"`
	// sum is the SHA-256 of the file's bytes as read, so a reload can tell
	// whether the file changed since.
	sum [sha256.Size]byte
}

// decodeConfig reads the file; named is how the user gave it ("--config",
// or config check's FILE argument), for the messages. A file that is not
// YAML, or whose values do not fit their types, is an error; other problems
// are returned with the decoded file so they can be reported beside the
// invalid values.
func decodeConfig(path, named string) (*configFile, []error, error) {
	raw, err := readConfigBytes(path)
	if err != nil {
		return nil, nil, fieldError(named, path, err.Error())
	}
	return decodeConfigBytes(raw, path, named)
}

// decodeConfigBytes is decodeConfig of the file's content, read already.
func decodeConfigBytes(raw []byte, path, named string) (*configFile, []error, error) {
	data, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: not YAML: %w", named, path, err)
	}
	c := configFile{sum: sha256.Sum256(raw)}
	strict, err := sigsjson.UnmarshalStrict(data, &c, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		if leafErrs := settingTypeErrors(data); len(leafErrs) > 0 {
			err = errors.Join(leafErrs...)
		}
		return nil, nil, fmt.Errorf("%s %s:\n%w", named, path, err)
	}
	errs := append([]error{}, strict...)
	if c.APIVersion != configAPIVersion {
		errs = append(errs, fmt.Errorf("apiVersion: %q must be %s", c.APIVersion, configAPIVersion))
	}
	if c.Kind != configKind {
		errs = append(errs, fmt.Errorf("kind: %q must be %s", c.Kind, configKind))
	}
	if err := conditions.CompileSpecs(c.Conditions); err != nil {
		errs = append(errs, err)
	}
	return &c, errs, nil
}

// applyConfig loads --config, when given, into the flags the command line
// did not set, and keeps its conditions for the rules. It returns which
// flags the file set, by name, with the file's path for each, and the
// file's problems.
func (o *runOptions) applyConfig(fs *pflag.FlagSet) (map[string]string, []error, error) {
	if o.conds.config == "" {
		return nil, nil, nil
	}
	c, errs, err := decodeConfig(o.conds.config, o.conds.configName())
	if err != nil {
		return nil, nil, err
	}
	fromFile, setErrs := c.applyTo(fs)
	o.conds.file = c
	return fromFile, append(errs, setErrs...), nil
}
