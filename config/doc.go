// Package config is hangwatch's configuration: the hangwatch.io/v1alpha1
// HangwatchConfiguration, its defaults, its strict decoding, its checks,
// and the command-line flags bound to its fields. One value holds every
// setting; a flag given on the command line wins over the file.
//
// The layout follows the kubelet's pkg/kubelet/apis/config: types here,
// defaults in defaults.go, checks in validation.go. What each package
// takes as its options is built from these types by the assemblies, through
// options; config builds none of them.
package config
