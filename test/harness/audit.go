package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditPolicy logs every request once, when it completes, at Metadata
// level: who, with which user agent, what verb on what resource.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
`

// AuditEvent is one request the API server answered, from its audit log.
type AuditEvent struct {
	User      string
	UserAgent string
	Verb      string
	Resource  string // resource[/subresource], or the non-resource path
	Code      int
	At        time.Time // when the answer was complete
}

// auditArgs writes the audit policy into dir and returns the API server's
// flags for it.
func auditArgs(dir string) (logPath string, args []string, err error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return "", nil, fmt.Errorf("audit policy: %w", err)
	}
	logPath = filepath.Join(dir, "audit.log")
	return logPath, []string{"--audit-policy-file=" + policy, "--audit-log-path=" + logPath, "--audit-log-format=json",
		"--audit-log-maxbackup=1", "--audit-log-maxsize=200"}, nil
}

// AuditEvents reads the API server's audit log: every request answered
// so far.
func (cp *ControlPlane) AuditEvents() ([]AuditEvent, error) {
	f, err := os.Open(cp.AuditLog)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			User       struct{ Username string } `json:"user"`
			UserAgent  string                    `json:"userAgent"`
			Verb       string                    `json:"verb"`
			RequestURI string                    `json:"requestURI"`
			ObjectRef  *struct {
				Resource, Subresource string
			} `json:"objectRef"`
			ResponseStatus *struct{ Code int } `json:"responseStatus"`
			StageTimestamp time.Time           `json:"stageTimestamp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log line %q: %w", sc.Text(), err)
		}
		ev := AuditEvent{User: e.User.Username, UserAgent: e.UserAgent, Verb: e.Verb, At: e.StageTimestamp}
		if e.ObjectRef != nil {
			ev.Resource = strings.TrimSuffix(e.ObjectRef.Resource+"/"+e.ObjectRef.Subresource, "/")
		} else {
			ev.Resource, _, _ = strings.Cut(e.RequestURI, "?")
		}
		if e.ResponseStatus != nil {
			ev.Code = e.ResponseStatus.Code
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}
