package main

import (
	"testing"
	"time"

	"github.com/cozystack/tenant-operator/internal/bundle"
)

func TestSplitBootstrap(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const op, kcm, harness = "system:serviceaccount:cozy-tenant-operator:tenant-operator", "system:serviceaccount:kube-system:daemon-set-controller", "bench-admin"
	ev := func(user, verb, resource, sub, ns, uri string, from, to int) *auditEvent {
		e := &auditEvent{Verb: verb, RequestURI: uri, Received: at(from), Completed: at(to)}
		e.User.Username = user
		e.ObjectRef = &struct{ Resource, Subresource, Namespace, Name string }{resource, sub, ns, ""}
		return e
	}
	comps := []bundle.Component{
		{Name: "cilium", Release: bundle.ReleaseRef{Name: "cilium", Namespace: "cozy-cilium"}},
		{Name: "coredns", DependsOn: []string{"cilium"}, Release: bundle.ReleaseRef{Name: "coredns", Namespace: "kube-system"}},
		{Name: "unplanned", DependsOn: []string{"cilium"}, Release: bundle.ReleaseRef{Name: "x", Namespace: "x"}},
	}
	events := []*auditEvent{
		ev(harness, "patch", "tenantbundles", "", "", "", 200, 250),
		ev(op, "list", "tenantbundles", "", "", "", 300, 302),
		ev(op, "list", "secrets", "", "cozy-cilium", "/api/v1/namespaces/cozy-cilium/secrets?labelSelector=owner%3Dhelm%2Cname%3Dcilium", 400, 401),
		ev(kcm, "update", "daemonsets", "status", "cozy-cilium", "", 700, 710),
		// A write still in flight when the operator reacts is not what it reacted to.
		ev(kcm, "update", "daemonsets", "status", "cozy-cilium", "", 735, 760),
		ev(op, "list", "secrets", "", "kube-system", "/api/v1/namespaces/kube-system/secrets?labelSelector=owner%3Dhelm%2Cname%3Dcoredns", 740, 741),
		ev(op, "patch", "tenantbundles", "status", "", "", 800, 820),
		ev(kcm, "update", "deployments", "status", "kube-system", "", 1000, 1010),
		ev(op, "patch", "tenantbundles", "status", "", "", 1030, 1050),
		// After the harness saw Ready: not the write it saw.
		ev(op, "patch", "tenantbundles", "status", "", "", 1100, 1110),
	}
	got, err := splitBootstrap(events, comps, operatorRun{created: at(200), ready: at(1060)})
	if err != nil {
		t.Fatal(err)
	}
	want := breakdown{total: 860 * time.Millisecond, startup: 150 * time.Millisecond, listed: 50 * time.Millisecond,
		reactions: map[string]time.Duration{"coredns": 30 * time.Millisecond}, final: 40 * time.Millisecond}
	if got.total != want.total || got.startup != want.startup || got.listed != want.listed || got.final != want.final ||
		len(got.reactions) != 1 || got.reactions["coredns"] != want.reactions["coredns"] {
		t.Errorf("splitBootstrap = %+v, want %+v", got, want)
	}

	if _, err := splitBootstrap(events[1:], comps, operatorRun{created: at(200), ready: at(1060)}); err == nil {
		t.Error("a log without the TenantBundle's creation must be an error")
	}
}
