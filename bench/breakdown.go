package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/seed"
)

// breakdown splits one bootstrap by where its time went, read from the API
// server's audit log: the operator's own latency at the three points where
// it, not the cluster, is what the bootstrap waits for. Everything else is
// Helm installing and the cluster rolling out, which the critical-path limit
// contains too.
type breakdown struct {
	// mode is how the clock started: with the process (seeded) or with
	// the TenantBundle's create request (running).
	mode  operatorStart
	total time.Duration
	// startup is the clock's start to the operator's first request about
	// the first component's release.
	startup time.Duration
	// firstRequest is the part of a seeded startup until the operator's
	// first request: exec, the Go runtime and package initialisers, flags.
	firstRequest time.Duration
	// listed is the part of a seeded startup until the operator's cache
	// lists TenantBundles: its CRDs applied and served, its manager started.
	listed time.Duration
	// reactions are, per component after the first, the last status write
	// of its dependencies' workloads (the kube-controller-manager's write
	// that made them Ready) to the operator's first request about its
	// release.
	reactions map[string]time.Duration
	// final is the last status write of any component's workloads to the
	// end of the operator's status write that the harness then saw Ready.
	final time.Duration
	// steps are, per component, its install and rollout inside the
	// bootstrap: the operator's first request about its release to the last
	// status write of its workloads before the operator moved on (its
	// dependents' first request, or the Ready status write). The limit
	// times the same span with the component installed alone.
	steps map[string]time.Duration
	// statusWrites are the operator's TenantBundle status writes from the
	// clock's start to the one the harness saw Ready, that one included,
	// and statusTime the API server's time on them, request by request.
	statusWrites int
	statusTime   time.Duration
}

// measureBreakdown runs one extra bootstrap, started as mode says and not
// timed with the others, with the API server's audit log on (which adds to
// every request's latency).
func measureBreakdown(ctx context.Context, bin string, nodes int, mode operatorStart, keepLogs bool) (breakdown, error) {
	log, args, cleanup, err := auditing()
	if err != nil {
		return breakdown{}, err
	}
	if keepLogs {
		fmt.Println("  audit log kept in", log)
	} else {
		defer cleanup()
	}
	run, err := measureOperator(ctx, bin, nodes, mode, "", keepLogs, args)
	if err != nil {
		return breakdown{}, err
	}
	def, err := bundle.Load(bundles.FS, "tenant")
	if err != nil {
		return breakdown{}, err
	}
	var events []*auditEvent
	err = readAudit(log, func(e *auditEvent) {
		if e.Stage == "ResponseComplete" {
			events = append(events, e)
		}
	})
	if err != nil {
		return breakdown{}, err
	}
	slices.SortFunc(events, func(a, b *auditEvent) int { return a.Received.Compare(b.Received) })
	return splitBootstrap(events, def.Components, run, mode)
}

// splitBootstrap reads the breakdown out of the audit events of one
// bootstrap, sorted by the time each request was received.
func splitBootstrap(events []*auditEvent, comps []bundle.Component, run operatorRun, mode operatorStart) (breakdown, error) {
	operator := fmt.Sprintf("system:serviceaccount:%s:%s", seed.DefaultNamespace, seed.Name)
	b := breakdown{mode: mode, total: run.ready.Sub(run.from), reactions: map[string]time.Duration{}, steps: map[string]time.Duration{}}
	// The clock's start is the harness's; the audit log's times are the
	// API server's, on the same machine.
	start := run.from
	if mode == seeded {
		if err := b.splitStart(events, operator, start); err != nil {
			return b, err
		}
	}
	first := map[string]time.Time{} // component → the operator's first request about its release
	for _, c := range comps {
		for _, e := range events {
			if e.User.Username == operator && e.resource() == "secrets" && e.ObjectRef.Namespace == c.Release.Namespace &&
				!e.Received.Before(start) && releaseSelected(e.RequestURI, c.Release.Name) {
				first[c.Name] = e.Received
				break
			}
		}
	}
	for _, c := range comps {
		at, ok := first[c.Name]
		if !ok {
			continue // not in this bootstrap's plan
		}
		var deps []string
		for _, d := range c.DependsOn {
			if _, ok := first[d]; ok {
				deps = append(deps, namespaceOf(comps, d))
			}
		}
		if len(deps) == 0 {
			b.startup = max(b.startup, at.Sub(start))
			continue
		}
		if last := lastWorkloadStatus(events, deps, at); !last.IsZero() {
			b.reactions[c.Name] = at.Sub(last)
		}
	}
	// The write the harness saw is the operator's last status write received
	// before the harness's watch delivered Ready: its watch event can arrive
	// before the API server logs the request complete, so a write completed
	// before then would be an earlier one (measured: once in a bench run,
	// which then timed the last component's whole rollout as the operator's).
	var readyWrite *auditEvent
	for _, e := range events {
		if e.User.Username == operator && e.resource() == "tenantbundles" && e.ObjectRef.Subresource == "status" && !e.Received.After(run.ready) {
			readyWrite = e
			if !e.Received.Before(start) {
				b.statusWrites++
				b.statusTime += e.Completed.Sub(e.Received)
			}
		}
	}
	if readyWrite == nil {
		return b, fmt.Errorf("audit log: no status write of the operator before Ready was seen")
	}
	var namespaces []string
	for name := range first {
		namespaces = append(namespaces, namespaceOf(comps, name))
		movedOn := readyWrite.Received
		for _, c := range comps {
			if at, ok := first[c.Name]; ok && slices.Contains(c.DependsOn, name) && at.Before(movedOn) {
				movedOn = at
			}
		}
		if last := lastWorkloadStatus(events, []string{namespaceOf(comps, name)}, movedOn); !last.IsZero() {
			b.steps[name] = last.Sub(first[name])
		}
	}
	if last := lastWorkloadStatus(events, namespaces, readyWrite.Received); !last.IsZero() {
		b.final = readyWrite.Completed.Sub(last)
	}
	return b, nil
}

// splitStart splits a seeded start at the operator's first request and at
// its cache's first list of TenantBundles.
func (b *breakdown) splitStart(events []*auditEvent, operator string, start time.Time) error {
	requested := false
	for _, e := range events {
		if e.User.Username != operator {
			continue
		}
		if !requested {
			b.firstRequest, requested = e.Received.Sub(start), true
		}
		// The cache's initial list is served from the watch cache
		// (resourceVersion=0); the prefetch's list at start is not.
		if e.resource() == "tenantbundles" && e.Verb == "list" && strings.Contains(e.RequestURI, "resourceVersion=0") {
			b.listed = e.Received.Sub(start)
			return nil
		}
	}
	return fmt.Errorf("audit log: the operator never listed TenantBundles")
}

// releaseSelected says whether a request lists the Secrets of one Helm
// release (Helm's storage selects them by owner=helm,name=<release>).
func releaseSelected(uri, release string) bool {
	u, err := url.Parse(uri)
	if err != nil {
		return false
	}
	return slices.Contains(strings.Split(u.Query().Get("labelSelector"), ","), "name="+release)
}

func namespaceOf(comps []bundle.Component, name string) string {
	for _, c := range comps {
		if c.Name == name {
			return c.Release.Namespace
		}
	}
	return ""
}

// lastWorkloadStatus is when the last status write to a workload in one of
// namespaces, received before t, completed.
func lastWorkloadStatus(events []*auditEvent, namespaces []string, t time.Time) time.Time {
	var last time.Time
	for _, e := range events {
		if !e.Received.Before(t) {
			break
		}
		switch e.resource() {
		case "deployments", "daemonsets", "statefulsets":
		default:
			continue
		}
		if e.ObjectRef.Subresource == "status" && slices.Contains(namespaces, e.ObjectRef.Namespace) && e.Completed.After(last) && e.Completed.Before(t) {
			last = e.Completed
		}
	}
	return last
}
