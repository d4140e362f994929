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
		// Seeded before the process started at 200.
		ev(harness, "patch", "tenantbundles", "", "", "", 100, 150),
		ev(op, "patch", "customresourcedefinitions", "", "", "", 260, 270),
		// The prefetch's list, then the cache's.
		ev(op, "list", "tenantbundles", "", "", "/apis/tenant.cozystack.io/v1alpha1/tenantbundles", 262, 263),
		ev(op, "list", "tenantbundles", "", "", "/apis/tenant.cozystack.io/v1alpha1/tenantbundles?limit=500&resourceVersion=0", 300, 302),
		ev(op, "list", "secrets", "", "cozy-cilium", "/api/v1/namespaces/cozy-cilium/secrets?labelSelector=owner%3Dhelm%2Cname%3Dcilium", 400, 401),
		ev(kcm, "update", "daemonsets", "status", "cozy-cilium", "", 700, 710),
		// A write still in flight when the operator reacts is not what it reacted to.
		ev(kcm, "update", "daemonsets", "status", "cozy-cilium", "", 735, 760),
		ev(op, "list", "secrets", "", "kube-system", "/api/v1/namespaces/kube-system/secrets?labelSelector=owner%3Dhelm%2Cname%3Dcoredns", 740, 741),
		ev(op, "patch", "tenantbundles", "status", "", "", 800, 820),
		ev(kcm, "update", "deployments", "status", "kube-system", "", 1000, 1010),
		// The harness's watch delivers Ready at 1045, before the API server
		// logs this write complete.
		ev(op, "patch", "tenantbundles", "status", "", "", 1030, 1050),
		// After the harness saw Ready: not the write it saw.
		ev(op, "patch", "tenantbundles", "status", "", "", 1100, 1110),
	}
	run := operatorRun{from: at(200), ready: at(1045)}
	got, err := splitBootstrap(events, comps, run, seeded)
	if err != nil {
		t.Fatal(err)
	}
	want := breakdown{total: 845 * time.Millisecond, startup: 200 * time.Millisecond, firstRequest: 60 * time.Millisecond,
		listed: 100 * time.Millisecond, reactions: map[string]time.Duration{"coredns": 30 * time.Millisecond}, final: 40 * time.Millisecond,
		statusWrites: 2, statusTime: 40 * time.Millisecond}
	if got.total != want.total || got.startup != want.startup || got.firstRequest != want.firstRequest || got.listed != want.listed ||
		got.final != want.final || len(got.reactions) != 1 || got.reactions["coredns"] != want.reactions["coredns"] ||
		len(got.steps) != 2 || got.steps["cilium"] != 310*time.Millisecond || got.steps["coredns"] != 270*time.Millisecond ||
		got.statusWrites != want.statusWrites || got.statusTime != want.statusTime {
		t.Errorf("splitBootstrap = %+v, want %+v", got, want)
	}

	// The operator running, the clock starts with the TenantBundle's
	// create request: no start-up to split, and nothing before the clock.
	started := operatorRun{from: at(380), ready: at(1045)}
	got, err = splitBootstrap(events, comps, started, running)
	if err != nil {
		t.Fatal(err)
	}
	if got.startup != 20*time.Millisecond || got.firstRequest != 0 || got.listed != 0 || got.reactions["coredns"] != 30*time.Millisecond ||
		got.final != 40*time.Millisecond || got.statusWrites != 2 {
		t.Errorf("splitBootstrap, operator running = %+v", got)
	}

	if _, err := splitBootstrap(append(events[:3:3], events[4:]...), comps, run, seeded); err == nil {
		t.Error("a log in which the operator never lists TenantBundles must be an error")
	}
}

func TestAuditWrites(t *testing.T) {
	tests := []struct {
		verb, uri string
		want      bool
	}{
		{"patch", "/apis/helm.toolkit.fluxcd.io/v2/namespaces/a/helmreleases/b?fieldManager=tenant-operator&force=true", true},
		{"patch", "/apis/helm.toolkit.fluxcd.io/v2/namespaces/a/helmreleases/b?dryRun=All&fieldManager=tenant-operator&force=true", false},
		{"create", "/api/v1/namespaces", true},
		{"delete", "/api/v1/namespaces/a?dryRun=All", false},
		{"update", "/apis/coordination.k8s.io/v1/namespaces/a/leases/b", true},
		{"get", "/api/v1/namespaces/a", false},
		{"watch", "/api/v1/nodes?watch=true", false},
	}
	for _, tt := range tests {
		e := &auditEvent{Verb: tt.verb, RequestURI: tt.uri}
		if got := e.writes(); got != tt.want {
			t.Errorf("%s %s: writes = %v, want %v", tt.verb, tt.uri, got, tt.want)
		}
	}
}
