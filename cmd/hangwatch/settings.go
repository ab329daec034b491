package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// settings are the config file's counterparts of `run`'s flags. Each leaf
// names its flag in the `flag` tag; a leaf left out of the file keeps the
// flag's value, and a flag given on the command line wins over the file.
type settings struct {
	Runtime             runtimeSettings             `json:"runtime"`
	Server              serverSettings              `json:"server"`
	Kernel              kernelSettings              `json:"kernel"`
	APIServer           apiServerSettings           `json:"apiServer"`
	Kubelet             kubeletSettings             `json:"kubelet"`
	PLEG                plegSettings                `json:"pleg"`
	RuntimeHung         runtimeHungSettings         `json:"runtimeHung"`
	KubeletUnresponsive kubeletUnresponsiveSettings `json:"kubeletUnresponsive"`
}

type runtimeSettings struct {
	Endpoint      *string          `json:"endpoint,omitempty" flag:"runtime-endpoint"`
	Timeout       *metav1.Duration `json:"timeout,omitempty" flag:"timeout"`
	CrictlConfig  *string          `json:"crictlConfig,omitempty" flag:"crictl-config"`
	KubeletConfig *string          `json:"kubeletConfig,omitempty" flag:"kubelet-config"`
	Period        *metav1.Duration `json:"period,omitempty" flag:"period"`
	Heartbeat     *metav1.Duration `json:"heartbeatPeriod,omitempty" flag:"heartbeat-period"`
	MaxPeriod     *metav1.Duration `json:"maxPeriod,omitempty" flag:"max-period"`
	CallLifetime  *metav1.Duration `json:"callLifetime,omitempty" flag:"call-lifetime"`
	SlowThreshold *metav1.Duration `json:"slowThreshold,omitempty" flag:"slow-threshold"`
	SampleSize    *int             `json:"sampleSize,omitempty" flag:"sample-size"`
	Concurrency   *int             `json:"concurrency,omitempty" flag:"concurrency"`
}

type serverSettings struct {
	ListenAddress          *string          `json:"listenAddress,omitempty" flag:"listen-address"`
	SecureListenAddress    *string          `json:"secureListenAddress,omitempty" flag:"secure-listen-address"`
	TLSCertFile            *string          `json:"tlsCertFile,omitempty" flag:"tls-cert-file"`
	TLSPrivateKeyFile      *string          `json:"tlsPrivateKeyFile,omitempty" flag:"tls-private-key-file"`
	AuthorizationResource  *string          `json:"authorizationResource,omitempty" flag:"authorization-resource"`
	AuthenticationCacheTTL *metav1.Duration `json:"authenticationCacheTTL,omitempty" flag:"authentication-cache-ttl"`
}

type kernelSettings struct {
	Enabled  *bool            `json:"enabled,omitempty" flag:"kernel"`
	KmsgPath *string          `json:"kmsgPath,omitempty" flag:"kmsg-path"`
	Rules    []string         `json:"rules,omitempty" flag:"kernel-rules"`
	Lookback *metav1.Duration `json:"lookback,omitempty" flag:"kernel-lookback"`
}

type apiServerSettings struct {
	Kubeconfig             *string          `json:"kubeconfig,omitempty" flag:"kubeconfig"`
	NodeName               *string          `json:"nodeName,omitempty" flag:"node-name"`
	QPS                    *float64         `json:"qps,omitempty" flag:"kube-api-qps"`
	Burst                  *int             `json:"burst,omitempty" flag:"kube-api-burst"`
	LeasePeriod            *metav1.Duration `json:"leasePeriod,omitempty" flag:"lease-period"`
	NodeMonitorGracePeriod *metav1.Duration `json:"nodeMonitorGracePeriod,omitempty" flag:"node-monitor-grace-period"`
	StatusHeartbeatPeriod  *metav1.Duration `json:"statusHeartbeatPeriod,omitempty" flag:"status-heartbeat-period"`
	OverwriteShared        []string         `json:"overwriteSharedConditions,omitempty" flag:"overwrite-shared-conditions"`
}

type kubeletSettings struct {
	MetricsURL            *string          `json:"metricsURL,omitempty" flag:"kubelet-metrics-url"`
	TokenFile             *string          `json:"tokenFile,omitempty" flag:"kubelet-token-file"`
	Kubeconfig            *string          `json:"kubeconfig,omitempty" flag:"kubelet-kubeconfig"`
	CAFile                *string          `json:"caFile,omitempty" flag:"kubelet-ca-file"`
	TLSServerName         *string          `json:"tlsServerName,omitempty" flag:"kubelet-tls-server-name"`
	InsecureSkipTLSVerify *bool            `json:"insecureSkipTLSVerify,omitempty" flag:"kubelet-insecure-skip-tls-verify"`
	MetricsTimeout        *metav1.Duration `json:"metricsTimeout,omitempty" flag:"kubelet-metrics-timeout"`
	MetricsPeriod         *metav1.Duration `json:"metricsPeriod,omitempty" flag:"kubelet-metrics-period"`
}

type plegSettings struct {
	Window              *metav1.Duration `json:"window,omitempty" flag:"pleg-window"`
	StaleAfter          *metav1.Duration `json:"staleAfter,omitempty" flag:"pleg-stale-after"`
	EmulationStallAfter *metav1.Duration `json:"emulationStallAfter,omitempty" flag:"pleg-emulation-stall-after"`
	SlowRelist          *metav1.Duration `json:"slowRelist,omitempty" flag:"pleg-slow-relist"`
	SlowFor             *metav1.Duration `json:"slowFor,omitempty" flag:"pleg-slow-for"`
	EmulationPeriod     *metav1.Duration `json:"emulationPeriod,omitempty" flag:"pleg-emulation-period"`
}

type runtimeHungSettings struct {
	RaiseAfter *int `json:"raiseAfter,omitempty" flag:"runtime-hung-raise-after"`
	ClearAfter *int `json:"clearAfter,omitempty" flag:"runtime-hung-clear-after"`
}

type kubeletUnresponsiveSettings struct {
	Share *float64 `json:"share,omitempty" flag:"kubelet-unresponsive-share"`
}

// settingLeaf is one leaf of settings: its path in the file, its flag and
// its value.
type settingLeaf struct {
	path  string
	flag  string
	value reflect.Value
}

// leaves lists every leaf of s, in declaration order.
func (s *settings) leaves() []settingLeaf {
	var out []settingLeaf
	top := reflect.ValueOf(s).Elem()
	for i := 0; i < top.NumField(); i++ {
		section := top.Field(i)
		prefix := jsonName(top.Type().Field(i))
		for j := 0; j < section.NumField(); j++ {
			f := section.Type().Field(j)
			out = append(out, settingLeaf{path: prefix + "." + jsonName(f), flag: f.Tag.Get("flag"), value: section.Field(j)})
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// applyTo sets each flag the file gives and the command line does not; it
// returns the flags it set, by name, with the file path that set them, and
// one error per value the flag does not take.
func (s *settings) applyTo(fs *pflag.FlagSet) (map[string]string, []error) {
	fromFile := map[string]string{}
	var errs []error
	for _, l := range s.leaves() {
		text, ok := leafText(l.value)
		if !ok || fs.Changed(l.flag) {
			continue
		}
		f := fs.Lookup(l.flag)
		if f == nil {
			errs = append(errs, fmt.Errorf("%s: no flag --%s to set", l.path, l.flag))
			continue
		}
		if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
			if err := sv.Replace(l.value.Interface().([]string)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", l.path, err))
			}
		} else if err := f.Value.Set(text); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q: %w", l.path, text, err))
		}
		fromFile[l.flag] = l.path
	}
	return fromFile, errs
}

// leafText is the flag text of a leaf the file set.
func leafText(v reflect.Value) (string, bool) {
	if v.IsNil() {
		return "", false
	}
	if v.Kind() == reflect.Slice {
		return strings.Join(v.Interface().([]string), ","), true
	}
	switch p := v.Interface().(type) {
	case *metav1.Duration:
		return p.Duration.String(), true
	default:
		return fmt.Sprint(v.Elem().Interface()), true
	}
}

// effectiveSettings fills every leaf from the flags' current values: what
// `run` would use.
func effectiveSettings(fs *pflag.FlagSet) (*settings, error) {
	s := &settings{}
	for _, l := range s.leaves() {
		f := fs.Lookup(l.flag)
		if f == nil {
			return nil, fmt.Errorf("%s: no flag --%s", l.path, l.flag)
		}
		if err := setLeaf(l.value, f.Value); err != nil {
			return nil, fmt.Errorf("%s (--%s): %w", l.path, l.flag, err)
		}
	}
	return s, nil
}

func setLeaf(v reflect.Value, fv pflag.Value) error {
	text := fv.String()
	var parsed any
	var err error
	switch v.Type() {
	case reflect.TypeOf([]string{}):
		sv, ok := fv.(pflag.SliceValue)
		if !ok {
			return fmt.Errorf("flag is not a list")
		}
		v.Set(reflect.ValueOf(append([]string{}, sv.GetSlice()...)))
		return nil
	case reflect.TypeOf(&metav1.Duration{}):
		var d time.Duration
		d, err = time.ParseDuration(text)
		parsed = &metav1.Duration{Duration: d}
	case reflect.TypeOf(new(string)):
		parsed = &text
	case reflect.TypeOf(new(bool)):
		var b bool
		b, err = strconv.ParseBool(text)
		parsed = &b
	case reflect.TypeOf(new(int)):
		var n int
		n, err = strconv.Atoi(text)
		parsed = &n
	case reflect.TypeOf(new(float64)):
		var x float64
		x, err = strconv.ParseFloat(text, 64)
		parsed = &x
	default:
		return fmt.Errorf("unsupported setting type %s", v.Type())
	}
	if err != nil {
		return err
	}
	v.Set(reflect.ValueOf(parsed))
	return nil
}

// settingTypeErrors decodes each setting on its own to name the ones whose
// value does not fit its type (the decoder's own error may not name them).
func settingTypeErrors(data []byte) []error {
	var sections map[string]map[string]json.RawMessage
	if json.Unmarshal(data, &sections) != nil {
		// some top-level value is not a section; decode what is
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil {
			return nil
		}
		sections = map[string]map[string]json.RawMessage{}
		for k, v := range top {
			var section map[string]json.RawMessage
			if json.Unmarshal(v, &section) == nil {
				sections[k] = section
			}
		}
	}
	var errs []error
	for _, l := range (&settings{}).leaves() {
		section, name, _ := strings.Cut(l.path, ".")
		raw, ok := sections[section][name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, reflect.New(l.value.Type()).Interface()); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", l.path, raw, err))
		}
	}
	return errs
}
