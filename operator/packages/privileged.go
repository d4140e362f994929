package packages

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/privilege"
	"github.com/cozystack/tenant-operator/internal/values"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// missPodFindings makes the classifier blind to pods; only a test build
// sets it (blind_classifier.go).
var missPodFindings = false

// findingsCache keys findings by everything a rendering depends on, so a
// reconcile that changes nothing renders nothing.
type findingsCache struct {
	mu    sync.Mutex
	items map[string]classified
}

// classified is what classify learns of one rendering.
type classified struct {
	privilege.Result
	// CallsLookup says a template reads the cluster.
	CallsLookup bool
}

// classify renders each release with the values Flux will give it (chart
// values, then the cluster layer, then the Package's own) and records what
// makes it privileged, whatever install.privileged says: the package author
// is not the one who decides.
func (r *Reconciler) classify(pkg *cozyv1.Package, desired []*release, cluster map[string]any, catalogApp bool) error {
	var all, evidence []string
	// Read once per classification that renders, when it renders: a
	// Package whose findings are cached costs no discovery.
	var caps *helm.Capabilities
	capabilities := func() (*helm.Capabilities, error) {
		if caps != nil || r.Capabilities == nil {
			return caps, nil
		}
		c, err := r.Capabilities()
		caps = c
		return c, err
	}
	for _, rel := range desired {
		layer := map[string]any{}
		if len(rel.HR.Spec.ValuesFrom) > 0 {
			layer = cluster
		}
		vals := values.Merge(layer, rel.Values)
		raw, err := json.Marshal(vals)
		if err != nil {
			return outcome.Terminal(ReasonValuesRejected, "spec.components.%s.values: %v", rel.Component.Name, err)
		}
		key := fmt.Sprintf("%s|%s|%s|%x", rel.Artifact.Digest, rel.HR.Namespace, rel.HR.Spec.ReleaseName, sha256.Sum256(raw))
		found, ok := r.findings.get(key)
		if !ok {
			c, err := capabilities()
			if err != nil {
				return outcome.Retry(ReasonInternalError, fmt.Errorf("component %s: the cluster's APIs, for rendering as Flux will: %w", rel.Component.Name, err))
			}
			manifests, err := helm.Render(rel.Chart, vals, rel.HR.Spec.ReleaseName, rel.HR.Namespace, c)
			if err != nil {
				return outcome.Terminal(ReasonChartInvalid, "component %s: rendering: %v", rel.Component.Name, err)
			}
			if found.Result, err = privilege.Classify(manifests, rel.HR.Namespace); err != nil {
				return outcome.Terminal(ReasonChartInvalid, "component %s: rendering: %v", rel.Component.Name, err)
			}
			lookups, err := helm.TemplatesCallingLookup(rel.Chart)
			if err != nil {
				return outcome.Terminal(ReasonChartInvalid, "component %s: %v", rel.Component.Name, err)
			}
			for _, t := range lookups {
				found.Findings = append(found.Findings, "template "+t+" calls lookup: what it renders depends on the cluster when Flux renders it")
				found.BeyondNamespace, found.CallsLookup = true, true
			}
			r.findings.put(key, found)
		}
		if missPodFindings && !found.BeyondNamespace {
			found = classified{}
		}
		rel.classified = found
		if catalogApp && r.PlatformNamespaces.Has(rel.HR.Namespace) {
			// Its rights in the namespace reach the platform's components.
			rel.Findings = append(slices.Clone(rel.Findings), "installs into namespace "+rel.HR.Namespace+", which the platform's own components run in")
			rel.BeyondNamespace = true
		}
		if found.Evidence != "" {
			evidence = append(evidence, rel.Component.Name+":"+found.Evidence)
		}
		if rel.Component.Install.Privileged {
			all = append(all, "component "+rel.Component.Name+": install.privileged is set")
		}
		for _, f := range rel.Findings {
			all = append(all, "component "+rel.Component.Name+": "+f)
		}
		if rel.Privileged() {
			rel.HR.Labels[PrivilegedLabel] = "true"
		}
	}
	pkg.Status.Privileged = nil
	if len(all) > 0 {
		fp := privilege.Fingerprint(all, evidence...)
		pkg.Status.Privileged = &cozyv1.PrivilegedStatus{Fingerprint: fp, Findings: all, Confirmed: pkg.Spec.ConfirmPrivileged == fp}
	}
	return nil
}

// gate holds a privileged catalog app until a tenant admin confirms exactly
// what it renders, or refuses it when the management side forbids
// privileged apps. Both are Stalled: only a spec change (a confirmation, a
// different app or values, the policy) moves it. Nothing already installed
// is touched, so a confirmed release keeps running while an upgrade that
// adds privileges waits. Addons are vouched for by the bundle.
func gate(pkg *cozyv1.Package, facts tenantFacts) error {
	p := pkg.Status.Privileged
	if p == nil || facts.isAddon(pkg) {
		return nil
	}
	what := strings.Join(p.Findings, "; ")
	if facts.policy == tenantv1.PrivilegedAppsForbidden {
		return outcome.Terminal(ReasonPrivilegedForbidden,
			"privileged catalog apps are forbidden in this tenant by the management side (TenantBundle spec.catalog.privilegedApps: Forbidden); it renders: %s", what)
	}
	if !p.Confirmed {
		return outcome.Terminal(ReasonPrivilegedNotConfirmed,
			"waiting for confirmation of its privileges: %s; confirm with `kubectl tenant catalog confirm %s` (spec.confirmPrivileged: %s)", what, pkg.Name, p.Fingerprint)
	}
	return nil
}

func (c *findingsCache) get(key string) (classified, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.items[key]
	return f, ok
}

func (c *findingsCache) put(key string, f classified) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Values churn would grow it without bound; the entries are cheap to
	// recompute.
	if c.items == nil || len(c.items) > 512 {
		c.items = map[string]classified{}
	}
	c.items[key] = f
}

// markReleases labels each HelmRelease with what the namespace it runs in
// must allow (see podSecurity), and a catalog app's as such.
func markReleases(desired []*release, catalogApp bool) {
	for _, rel := range desired {
		if rel.PrivilegedNamespace() {
			rel.HR.Labels[PrivilegedPodsLabel] = "true"
		}
		if catalogApp {
			rel.HR.Labels[CatalogAppLabel] = "true"
		}
	}
}
