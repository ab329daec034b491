package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/cri"
)

// AddFlags binds the flags of c's settings to its fields, with c's values
// as their defaults: all of them, or only those named in only (diag takes a
// few). A flag set on the command line writes straight into c.
func AddFlags(fs *pflag.FlagSet, c *Configuration, only ...string) {
	want := map[string]bool{}
	for _, name := range only {
		want[name] = true
	}
	for _, f := range c.fields() {
		if len(only) == 0 || want[f.flag] {
			addFlag(fs, f)
		}
	}
}

func addFlag(fs *pflag.FlagSet, f field) {
	switch v := f.value.(type) {
	case *string:
		fs.StringVarP(v, f.flag, f.short, *v, f.usage)
	case *bool:
		fs.BoolVarP(v, f.flag, f.short, *v, f.usage)
	case *int:
		fs.IntVarP(v, f.flag, f.short, *v, f.usage)
	case *float64:
		fs.Float64VarP(v, f.flag, f.short, *v, f.usage)
	case *[]string:
		fs.StringSliceVarP(v, f.flag, f.short, *v, f.usage)
	case *metav1.Duration:
		fs.DurationVarP(&v.Duration, f.flag, f.short, v.Duration, f.usage)
	case **metav1.Duration:
		fs.VarP(&optionalDuration{v, optionalDefaults[f.flag]}, f.flag, f.short, f.usage)
	case **int:
		fs.VarP(&optionalInt{v, optionalDefaults[f.flag]}, f.flag, f.short, f.usage)
	default:
		panic(fmt.Sprintf("config: %s has a value of type %T, which has no flag", f.path, f.value))
	}
}

// optionalDefaults are shown in --help for settings that are unset by
// default, where another source (crictl's config, the built-in rule)
// fills them.
var optionalDefaults = map[string]string{
	"timeout":                  cri.DefaultTimeout.String(),
	"runtime-hung-raise-after": strconv.Itoa(DefaultRaiseAfter),
	"runtime-hung-clear-after": strconv.Itoa(DefaultClearAfter),
}

// optionalDuration is a flag whose field stays nil until it is given; def
// is what --help shows meanwhile.
type optionalDuration struct {
	p   **metav1.Duration
	def string
}

func (o *optionalDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*o.p = &metav1.Duration{Duration: v}
	return nil
}

func (o *optionalDuration) String() string {
	if *o.p == nil {
		return o.def
	}
	return (*o.p).Duration.String()
}

func (o *optionalDuration) Type() string { return "duration" }

// optionalInt is a flag whose field stays nil until it is given; def is
// what --help shows meanwhile.
type optionalInt struct {
	p   **int
	def string
}

func (o *optionalInt) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	*o.p = &v
	return nil
}

func (o *optionalInt) String() string {
	if *o.p == nil {
		return o.def
	}
	return strconv.Itoa(**o.p)
}

func (o *optionalInt) Type() string { return "int" }

// overrideWith sets on c every flag of fs given on the command line, so the
// command line wins over a file decoded into c. It returns the flags it
// set.
func (c *Configuration) overrideWith(fs *pflag.FlagSet) (map[string]bool, error) {
	bound := pflag.NewFlagSet("file", pflag.ContinueOnError)
	AddFlags(bound, c)
	set := map[string]bool{}
	var err error
	fs.Visit(func(f *pflag.Flag) {
		target := bound.Lookup(f.Name)
		if target == nil || err != nil {
			return // not a setting: --config, -v, --output
		}
		set[f.Name] = true
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			err = target.Value.(pflag.SliceValue).Replace(sv.GetSlice())
			return
		}
		err = target.Value.Set(f.Value.String())
	})
	return set, err
}
