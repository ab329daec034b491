// Package config is hangwatch's configuration: the hangwatch.io/v1alpha1
// HangwatchConfiguration, its defaults, its strict decoding, its checks,
// and the command-line flags bound to its fields. One value holds every
// setting; a flag given on the command line wins over the file.
//
// The layout follows the kubelet's pkg/kubelet/apis/config: types here,
// defaults in defaults.go, checks in validation.go.
package config
