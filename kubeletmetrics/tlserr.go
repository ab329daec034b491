package kubeletmetrics

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// isTLSError reports whether err is the serving certificate not verifying.
func isTLSError(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}
