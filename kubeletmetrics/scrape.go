package kubeletmetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// ErrorKind classifies a failed scrape; the values are metric label values.
type ErrorKind string

// The ways a scrape fails.
const (
	KindTimeout      ErrorKind = "timeout"      // no answer within the deadline: evidence, not noise
	KindUnreachable  ErrorKind = "unreachable"  // connection refused or reset
	KindUnauthorized ErrorKind = "unauthorized" // 401: no or bad credentials
	KindForbidden    ErrorKind = "forbidden"    // 403: needs get on nodes/metrics
	KindHTTP         ErrorKind = "http_error"   // any other status
	KindParse        ErrorKind = "parse_error"  // garbage or truncated text
	KindTLS          ErrorKind = "tls_error"    // serving certificate not trusted
)

// ScrapeError is a failed scrape with its kind.
type ScrapeError struct {
	Kind   ErrorKind
	URL    string
	Status int
	Err    error
}

func (e *ScrapeError) Error() string { return fmt.Sprintf("scrape %s: %s: %v", e.URL, e.Kind, e.Err) }
func (e *ScrapeError) Unwrap() error { return e.Err }

// Kind returns the kind of a scrape error, "" for nil.
func Kind(err error) ErrorKind {
	var se *ScrapeError
	if errors.As(err, &se) {
		return se.Kind
	}
	if err != nil {
		return KindHTTP
	}
	return ""
}

// MaxBody bounds a metrics response; a kubelet's is about 200 KB (the
// captures in testdata), growing with its pods and containers.
const MaxBody = 8 << 20

// Scraper fetches and parses the kubelet's metrics.
type Scraper struct {
	opts   Options
	client *http.Client
}

// NewScraper validates o and builds the client.
func NewScraper(o Options) (*Scraper, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	rt, err := o.roundTripper()
	if err != nil {
		return nil, err
	}
	return &Scraper{opts: o, client: &http.Client{Transport: rt, CheckRedirect: refuseRedirect}}, nil
}

// refuseRedirect keeps a redirect's answer as the answer: the kubelet
// never redirects /metrics, and following one would send the bearer token
// or client certificate to wherever it points.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// URL is the metrics URL scraped.
func (s *Scraper) URL() string { return s.opts.URL }

// Timeout is a scrape's own deadline.
func (s *Scraper) Timeout() time.Duration { return s.opts.Timeout }

// Scrape fetches and parses /metrics once, within the scraper's timeout or
// ctx's deadline, whichever comes first.
func (s *Scraper) Scrape(ctx context.Context) (*Snapshot, error) {
	body, err := s.get(ctx, s.opts.URL)
	if err != nil {
		return nil, err
	}
	snap, err := ParseBytes(body)
	if err != nil {
		return nil, &ScrapeError{Kind: KindParse, URL: s.opts.URL, Status: http.StatusOK, Err: err}
	}
	return snap, nil
}

func (s *Scraper) get(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &ScrapeError{Kind: KindHTTP, URL: url, Err: err}
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, &ScrapeError{Kind: transportKind(ctx, err), URL: url, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, &ScrapeError{Kind: statusKind(resp.StatusCode), URL: url, Status: resp.StatusCode,
			Err: fmt.Errorf("HTTP %d: %q", resp.StatusCode, snippet)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		// The kubelet stopped sending mid-body: a deadline, or a cut connection.
		return nil, &ScrapeError{Kind: transportKind(ctx, err), URL: url, Status: resp.StatusCode, Err: fmt.Errorf("read body: %w", err)}
	}
	if len(body) > MaxBody {
		return nil, &ScrapeError{Kind: KindParse, URL: url, Status: resp.StatusCode, Err: fmt.Errorf("body over %d MiB: not read", MaxBody>>20)}
	}
	return body, nil
}

func statusKind(code int) ErrorKind {
	switch code {
	case http.StatusUnauthorized:
		return KindUnauthorized
	case http.StatusForbidden:
		return KindForbidden
	}
	return KindHTTP
}

func transportKind(ctx context.Context, err error) ErrorKind {
	var ne net.Error
	switch {
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	case errors.As(err, &ne) && ne.Timeout():
		return KindTimeout
	case isTLSError(err):
		return KindTLS
	}
	return KindUnreachable
}
