package main

import (
	"bufio"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/cozystack/tenant-operator/e2e/world"
)

// auditPolicy records every request at Metadata level, once per request.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// auditing prepares an audit log for a world's API server: the log's path,
// the kube-apiserver arguments that write it, and a cleanup.
func auditing() (string, map[string][]string, func(), error) {
	dir, err := os.MkdirTemp("", "bench-audit-")
	if err != nil {
		return "", nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	policy, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		cleanup()
		return "", nil, nil, err
	}
	args := map[string][]string{
		world.KubeAPIServer: {"--audit-policy-file=" + policy, "--audit-log-path=" + log, "--audit-log-format=json"},
	}
	return log, args, cleanup, nil
}

type auditEvent struct {
	AuditID    string                    `json:"auditID"`
	Stage      string                    `json:"stage"`
	Verb       string                    `json:"verb"`
	RequestURI string                    `json:"requestURI"`
	Received   time.Time                 `json:"requestReceivedTimestamp"`
	Completed  time.Time                 `json:"stageTimestamp"`
	User       struct{ Username string } `json:"user"`
	ObjectRef  *struct {
		Resource, Subresource, Namespace, Name string
	} `json:"objectRef"`
}

// resource is the event's resource ("" for a non-resource request).
func (e *auditEvent) resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Resource
}

// writes reports whether the request could change what the API server
// stores: a write verb, not a dry run.
func (e *auditEvent) writes() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return !e.dryRun()
	}
	return false
}

// dryRun reports a request made with dryRun: fluxcd/pkg/ssa compares every
// apply by a dry run first, which the audit log records as a patch.
func (e *auditEvent) dryRun() bool {
	u, err := url.Parse(e.RequestURI)
	return err == nil && u.Query().Get("dryRun") != ""
}

// readAudit calls fn with every event of the log, in the log's order.
func readAudit(path string, fn func(*auditEvent)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return err
		}
		fn(&e)
	}
	return sc.Err()
}
