package leases

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type versionBody struct {
	body string
	err  error
}

func (v versionBody) ServerVersion(context.Context) ([]byte, error) { return []byte(v.body), v.err }

func TestServerGraceFollowsTheAPIServersVersion(t *testing.T) {
	for _, c := range []struct {
		body    string
		err     error
		want    time.Duration
		wantErr string
	}{
		{body: `{"major":"1","minor":"37"}`, want: 50 * time.Second},
		{body: `{"major":"1","minor":"31+"}`, want: 40 * time.Second},
		{body: `{"major":"1","minor":"x"}`, want: DefaultGrace, wantErr: `minor "x" not understood`},
		{body: `not json`, want: DefaultGrace, wantErr: "API server version"},
		{err: errors.New("connection refused"), want: DefaultGrace, wantErr: "connection refused"},
	} {
		got, err := ServerGrace(context.Background(), versionBody{c.body, c.err})
		if got != c.want || (c.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%q, %v: grace %v, error %v; want %v, an error with %q", c.body, c.err, got, err, c.want, c.wantErr)
		}
	}
}
