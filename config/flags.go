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
		fs.VarP(optionalDuration(v, optionalDefaults[f.flag]), f.flag, f.short, f.usage)
	case **int:
		fs.VarP(optionalInt(v, optionalDefaults[f.flag]), f.flag, f.short, f.usage)
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

// optional is a flag whose field stays nil until it is given; def is what
// --help shows meanwhile.
type optional[T any] struct {
	p      **T
	def    string
	typ    string
	parse  func(string) (T, error)
	format func(T) string
}

func (o *optional[T]) Set(s string) error {
	v, err := o.parse(s)
	if err != nil {
		return err
	}
	*o.p = &v
	return nil
}

func (o *optional[T]) String() string {
	if *o.p == nil {
		return o.def
	}
	return o.format(**o.p)
}

func (o *optional[T]) Type() string { return o.typ }

func optionalDuration(p **metav1.Duration, def string) pflag.Value {
	return &optional[metav1.Duration]{p: p, def: def, typ: "duration",
		parse: func(s string) (metav1.Duration, error) {
			d, err := time.ParseDuration(s)
			return metav1.Duration{Duration: d}, err
		},
		format: func(d metav1.Duration) string { return d.Duration.String() }}
}

func optionalInt(p **int, def string) pflag.Value {
	return &optional[int]{p: p, def: def, typ: "int", parse: strconv.Atoi, format: strconv.Itoa}
}

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
