package config

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/hangwatch/hangwatch/internal/fielderr"
)

// Loader loads the configuration `run` uses: the defaults, the file over
// them, and the flags given on the command line over both. It loads the
// same way at start and on each reload.
type Loader struct {
	// Path is the file; empty: no file.
	Path string
	// Named is how the user gave the file, for messages: "--config", or
	// config check's "FILE".
	Named string
	// Flags is the parsed command line, its flags bound with AddFlags.
	Flags *pflag.FlagSet
	// Check, when set, adds the checks of the options built from the
	// configuration (options.Check): config builds none of them.
	Check func(*Configuration) []error
}

// Loaded is a configuration that passed every check.
type Loaded struct {
	*Configuration
	// Sum is the SHA-256 of the file as read; zero without a file.
	Sum [sha256.Size]byte
}

// Load reads the file, when there is one, and loads it.
func (l *Loader) Load() (*Loaded, error) {
	if l.Path == "" {
		return l.load(nil)
	}
	raw, err := ReadFile(l.Path)
	if err != nil {
		return nil, &fielderr.Error{Path: l.Named, Value: l.Path, Problem: err.Error()}
	}
	return l.load(raw)
}

// LoadBytes loads the file's content, read already.
func (l *Loader) LoadBytes(raw []byte) (*Loaded, error) { return l.load(raw) }

// load reports every problem at once, each setting named as the user gave
// it: the flag when the command line set it, else the file's path with
// the flag beside it when the file set it.
func (l *Loader) load(raw []byte) (*Loaded, error) {
	out := &Loaded{Configuration: Default()}
	fileSet := map[string]bool{}
	var problems []error
	if raw != nil {
		f, err := Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("%s %s:\n%w", l.Named, l.Path, err)
		}
		out.Configuration, out.Sum, fileSet, problems = f.Config, f.Sum, f.Set, f.Problems
	}
	cliSet, err := out.overrideWith(l.Flags)
	if err != nil {
		return nil, err
	}
	problems = append(problems, Validate(out.Configuration)...)
	if l.Check != nil {
		problems = append(problems, l.Check(out.Configuration)...)
	}
	if len(problems) == 0 {
		return out, nil
	}
	named := make([]error, 0, len(problems))
	for _, p := range problems {
		named = append(named, nameAsGiven(p, cliSet, fileSet))
	}
	if raw != nil {
		return nil, fmt.Errorf("invalid configuration (%s %s and flags):\n%w", l.Named, l.Path, errors.Join(named...))
	}
	return nil, errors.Join(named...)
}

// nameAsGiven renames an Error's path to its flag, or to the path with
// its flag beside it when the file set it.
func nameAsGiven(err error, cliSet, fileSet map[string]bool) error {
	var fe *fielderr.Error
	if !errors.As(err, &fe) {
		return err
	}
	flag := flagOf(fe.Path)
	if flag == "" {
		return err
	}
	name := "--" + flag
	if fileSet[fe.Path] && !cliSet[flag] {
		name = fe.Path + " (--" + flag + ")"
	}
	return &fielderr.Error{Path: name, Value: fe.Value, Problem: fe.Problem}
}
