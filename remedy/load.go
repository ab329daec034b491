package remedy

import (
	"encoding/json"
	"errors"
	"fmt"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/internal/boundedfile"
)

// MaxPolicyBytes bounds the policy file.
const MaxPolicyBytes = 1 << 20

// document is the policy file as written.
type document struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*Policy    `json:",inline"`
}

// LoadPolicyFile reads and checks the policy file; empty path: the
// default policy.
func LoadPolicyFile(path string) (*Policy, error) {
	p, _, err := ReadPolicyFile(path)
	return p, err
}

// ReadPolicyFile is LoadPolicyFile that also returns the content read,
// for a reloader to compare with the next read; nil for the default
// policy.
func ReadPolicyFile(path string) (*Policy, []byte, error) {
	if path == "" {
		return DefaultPolicy(), nil, nil
	}
	raw, err := boundedfile.Read(path, MaxPolicyBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("--config: %w", err)
	}
	p, err := DecodePolicy(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("--config %s:\n%w", path, err)
	}
	return p, raw, nil
}

// DecodePolicy decodes a policy strictly over the defaults (a conditions
// list replaces the default one whole) and checks it, reporting every
// problem with its field path.
func DecodePolicy(raw []byte) (*Policy, error) {
	data, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	doc := document{Policy: DefaultPolicy()}
	defaults := doc.Conditions
	doc.Conditions = nil // decoded into fresh elements, not over the defaults'
	strict, err := sigsjson.UnmarshalStrict(data, &doc, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, err
	}
	if !hasKey(data, "conditions") {
		doc.Conditions = defaults
	}
	errs := append([]error{}, strict...)
	if doc.APIVersion != APIVersion {
		errs = append(errs, fmt.Errorf("apiVersion: %q must be %s", doc.APIVersion, APIVersion))
	}
	if doc.Kind != Kind {
		errs = append(errs, fmt.Errorf("kind: %q must be %s", doc.Kind, Kind))
	}
	errs = append(errs, Validate(doc.Policy)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return doc.Policy, nil
}

// hasKey tells whether the top level of a JSON object has key.
func hasKey(data []byte, key string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return false
	}
	_, ok := top[key]
	return ok
}
