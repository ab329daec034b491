package config

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	sigsjson "sigs.k8s.io/json"

	"github.com/hangwatch/hangwatch/internal/boundedfile"
	"sigs.k8s.io/yaml"
)

// MaxFileBytes bounds the config file.
const MaxFileBytes = 1 << 20

// File is a decoded config file.
type File struct {
	// Config is the defaults with the file's values over them.
	Config *Configuration
	// Set holds the paths of the settings the file gives ("runtime.period").
	Set map[string]bool
	// Sum is the SHA-256 of the file's bytes, so a reload can tell whether
	// it changed.
	Sum [sha256.Size]byte
	// Problems are unknown or duplicate fields and a wrong identity,
	// reported beside the invalid values.
	Problems []error
}

// document is the file as written: its identity, then the configuration.
type document struct {
	APIVersion     string `json:"apiVersion"`
	Kind           string `json:"kind"`
	*Configuration `json:",inline"`
}

// ReadFile reads the config file, at most MaxFileBytes.
func ReadFile(path string) ([]byte, error) { return boundedfile.Read(path, MaxFileBytes) }

// Decode decodes a config file strictly over the defaults. A file that is
// not YAML, or whose values do not fit their types, is an error naming
// each such field; other problems come back in File.Problems.
func Decode(raw []byte) (*File, error) {
	data, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	doc := document{Configuration: Default()}
	strict, err := sigsjson.UnmarshalStrict(data, &doc, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		if leafErrs := typeErrors(data); len(leafErrs) > 0 {
			err = errors.Join(leafErrs...)
		}
		return nil, err
	}
	f := &File{Config: doc.Configuration, Set: setPaths(data), Sum: sha256.Sum256(raw), Problems: strict}
	if doc.APIVersion != APIVersion {
		f.Problems = append(f.Problems, fmt.Errorf("apiVersion: %q must be %s", doc.APIVersion, APIVersion))
	}
	if doc.Kind != Kind {
		f.Problems = append(f.Problems, fmt.Errorf("kind: %q must be %s", doc.Kind, Kind))
	}
	return f, nil
}

// sections reads the file's top level as sections of raw values, leaving
// out what is not a section.
func sections(data []byte) map[string]map[string]json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	out := map[string]map[string]json.RawMessage{}
	for k, v := range top {
		var section map[string]json.RawMessage
		if json.Unmarshal(v, &section) == nil {
			out[k] = section
		}
	}
	return out
}

// setPaths lists the settings the file gives.
func setPaths(data []byte) map[string]bool {
	set := map[string]bool{}
	secs := sections(data)
	for _, f := range Default().fields() {
		if _, ok := secs[sectionOf(f.path)][leafOf(f.path)]; ok {
			set[f.path] = true
		}
	}
	return set
}

// typeErrors decodes each setting on its own to name the ones whose value
// does not fit its type (the decoder's own error may not name them).
func typeErrors(data []byte) []error {
	secs := sections(data)
	var errs []error
	for _, f := range Default().fields() {
		raw, ok := secs[sectionOf(f.path)][leafOf(f.path)]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.value); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", f.path, raw, err))
		}
	}
	return errs
}
