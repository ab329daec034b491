package leases

import (
	"context"
	"encoding/json"
	"fmt"
	"k8s.io/klog/v2"
	"strconv"
	"strings"
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"
)

// DefaultGrace is the node lifecycle controller's default
// --node-monitor-grace-period from Kubernetes 1.32, assumed when the API
// server's version is unknown.
const DefaultGrace = 50 * time.Second

// Grace returns the node lifecycle controller's default
// --node-monitor-grace-period for a Kubernetes minor version: 50s from 1.32
// (PR #126287), 40s before.
func Grace(major, minor int) time.Duration {
	if major > 1 || minor >= 32 {
		return DefaultGrace
	}
	return 40 * time.Second
}

// ServerVersioner returns the body of the API server's /version.
type ServerVersioner interface {
	ServerVersion(ctx context.Context) ([]byte, error)
}

// ServerGrace is Grace for the API server's version, asked within ctx's
// deadline. When the version cannot be read or understood it returns
// DefaultGrace with the error, for the caller to log.
func ServerGrace(ctx context.Context, server ServerVersioner) (time.Duration, error) {
	raw, err := server.ServerVersion(ctx)
	if err != nil {
		return DefaultGrace, fmt.Errorf("API server version: %w", err)
	}
	var v apiversion.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return DefaultGrace, fmt.Errorf("API server version: %w", err)
	}
	major, merr := strconv.Atoi(strings.TrimRight(v.Major, "+"))
	minor, nerr := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if merr != nil || nerr != nil {
		return DefaultGrace, fmt.Errorf("API server version: major %q, minor %q not understood", v.Major, v.Minor)
	}
	return Grace(major, minor), nil
}

// GraceFor is the grace period to judge the Lease against: configured
// when positive (--node-monitor-grace-period), else the controller's
// default for the API server's version, asked within 5 s. A version that
// cannot be read is logged, and DefaultGrace assumed.
func GraceFor(ctx context.Context, server ServerVersioner, configured time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	grace, err := ServerGrace(ctx, server)
	if err != nil {
		klog.ErrorS(err, "API server version unknown; assuming the 1.32+ default grace period", "grace", grace)
	}
	return grace
}
