package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// auditWritesPolicy records every request that writes, once it completed,
// at level Metadata (who, what, the response code; no bodies), and
// nothing else.
const auditWritesPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// AuditWrites writes into dir an audit policy recording every write, and
// returns the kube-apiserver flags (for Options.ExtraAPIServerArgs) that
// log it to dir/audit.log, one JSON event per line, written before the
// response is sent. The log tells who wrote what: give each process a
// user of its own (Server.WriteKubeconfigForUser).
func AuditWrites(dir string) (args []string, log string, err error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditWritesPolicy), 0o600); err != nil {
		return nil, "", err
	}
	log = filepath.Join(dir, "audit.log")
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + log,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0",
	}, log, nil
}

// AuditEvent is what a suite reads of one audit event.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// Resource is the event's resource with its subresource, as
// "deployments" or "mcpservers/status".
func (e AuditEvent) Resource() string {
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// AuditLog reads an audit log as it grows.
type AuditLog struct {
	Path   string
	offset int64
}

// Mark forgets every event logged so far: Read returns only later ones.
func (l *AuditLog) Mark() error {
	fi, err := os.Stat(l.Path)
	if os.IsNotExist(err) {
		l.offset = 0
		return nil
	}
	if err != nil {
		return err
	}
	l.offset = fi.Size()
	return nil
}

// Read returns the events logged since the last Mark (or since the log
// began), without moving the mark.
func (l *AuditLog) Read() ([]AuditEvent, error) {
	f, err := os.Open(l.Path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return nil, err
	}
	var out []AuditEvent
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			// A line being written is read next time.
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var e AuditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s: %w", l.Path, err)
		}
		out = append(out, e)
	}
}
