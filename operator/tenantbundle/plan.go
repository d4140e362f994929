package tenantbundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/source"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/bootstrap"
)

// plan is what one reconcile works from.
type plan struct {
	variant    *bundle.Variant
	variantErr error // a terminal problem with the variant; the network tier still runs
	components []bundle.Component
	facts      bundle.Facts
	nodes      []corev1.Node
}

// makePlan resolves the bundle, the variant and the cluster facts of obj
// into the ordered list of tenant-side components.
func (r *Reconciler) makePlan(ctx context.Context, obj *tenantv1.TenantBundle) (*plan, error) {
	def, err := bundle.Load(r.Bundles, obj.Spec.Bundle)
	if err != nil {
		return nil, outcome.Terminal(tenantv1.ReasonUnknownBundle, "spec.bundle: %v", err)
	}
	for name := range obj.Spec.Components {
		if !r.knownComponent(def, name) {
			return nil, outcome.Terminal(tenantv1.ReasonUnknownComponent,
				"spec.components.%s: bundle %q and its variants have no such component (it has: %s)", name, def.Name, componentNames(def))
		}
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, err
	}
	p := &plan{nodes: nodes.Items}
	p.variant, p.variantErr = r.resolveVariant(ctx, obj, nodes.Items)
	credentials, err := r.checkCredentials(ctx, obj, p.variant)
	if err != nil {
		p.variant, p.variantErr = nil, err
	}
	full := def
	if p.variant != nil {
		if full, err = def.With(p.variant); err != nil {
			return nil, outcome.Terminal(tenantv1.ReasonUnknownVariant, "spec.variant: %v", err)
		}
	}
	minor, err := r.KubeMinor()
	if err != nil {
		return nil, fmt.Errorf("reading the Kubernetes version: %w", err)
	}
	c := obj.Spec.Cluster
	p.facts, err = bundle.NewFacts(bundle.ClusterInput{APIEndpoint: c.APIEndpoint, PodCIDR: c.PodCIDR,
		ServiceCIDR: c.ServiceCIDR, DNSServiceIP: c.DNSServiceIP, GatewayAPI: c.GatewayAPI,
		StorageClasses: storageClasses(obj.Spec.Cloud.StorageClasses), CredentialsSecret: credentials, KubeMinor: minor},
		def.Settings)
	if err != nil {
		return nil, outcome.Terminal(tenantv1.ReasonInvalidSpec, "%v", err)
	}
	if p.components, err = full.Plan(p.facts); err != nil {
		return nil, outcome.Terminal(tenantv1.ReasonUnknownBundle, "spec.bundle: %v", err)
	}
	return p, nil
}

func (r *Reconciler) knownComponent(def *bundle.Definition, name string) bool {
	if def.Component(name) != nil {
		return true
	}
	for _, v := range r.Variants {
		for _, c := range v.Components {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// storageClasses shapes the map the way the kubevirt-csi-node chart reads it.
func storageClasses(in map[string]tenantv1.StorageClass) map[string]any {
	if len(in) == 0 {
		return nil
	}
	out := map[string]any{}
	for name, sc := range in {
		out[name] = map[string]any{"infraStorageClass": sc.InfraStorageClass, "default": sc.Default}
	}
	return out
}

func componentNames(def *bundle.Definition) string {
	names := make([]string, 0, len(def.Components))
	for _, c := range def.Components {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// pull fetches and verifies the packages artifact. The registry is asked
// again only when the spec changed or a reconcile was requested: the many
// reconciles of a bootstrap (one per workload event) reuse the digest the
// last one resolved, and a tag moved in the registry is picked up on the
// next spec change or reconcile request.
func (r *Reconciler) pull(ctx context.Context, obj *tenantv1.TenantBundle) (*source.Artifact, error) {
	if obj.Status.ArtifactDigest != "" && obj.Status.ObservedGeneration == obj.Generation &&
		obj.Status.LastHandledReconcileAt == obj.GetAnnotations()[requestedAtAnnotation] {
		if art, ok := r.Puller.Cached(obj.Status.ArtifactDigest); ok {
			return art, nil
		}
	}
	p := obj.Spec.Packages
	ref := source.Ref{URL: p.URL, Tag: p.Tag, Digest: p.Digest, Insecure: p.Insecure}
	if p.PullSecretRef != nil {
		user, pass, err := r.pullCredentials(ctx, *p.PullSecretRef, p.URL)
		if err != nil {
			return nil, err
		}
		ref.Username, ref.Password = user, pass
	}
	art, err := r.Puller.Pull(ctx, ref)
	switch {
	case errors.Is(err, source.ErrDigestMismatch):
		return nil, outcome.Terminal(tenantv1.ReasonDigestMismatch, "spec.packages: %v", err)
	case errors.Is(err, source.ErrInvalidArtifact):
		return nil, outcome.Terminal(tenantv1.ReasonArtifactFailed, "spec.packages: %v", err)
	case err != nil:
		// A missing tag or an unreachable registry can heal: retry with backoff.
		return nil, outcome.Retry(tenantv1.ReasonArtifactFailed, fmt.Errorf("spec.packages: %w", err))
	}
	return art, nil
}

// pullCredentials reads a dockerconfigjson Secret with the uncached reader:
// the operator does not watch Secrets, so none of them sits in its memory.
func (r *Reconciler) pullCredentials(ctx context.Context, ref tenantv1.SecretReference, url string) (string, string, error) {
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return "", "", outcome.Retry(tenantv1.ReasonArtifactFailed, fmt.Errorf("spec.packages.pullSecretRef: %w", err))
	}
	user, pass, err := source.Credentials(&s, url)
	if err != nil {
		return "", "", outcome.Terminal(tenantv1.ReasonInvalidSpec, "spec.packages.pullSecretRef: %v", err)
	}
	return user, pass, nil
}

// components builds each planned component's chart, values and digest.
func (r *Reconciler) components(ctx context.Context, obj *tenantv1.TenantBundle, planned []bundle.Component, facts bundle.Facts, art *source.Artifact) ([]*bootstrap.Component, error) {
	out := make([]*bootstrap.Component, 0, len(planned))
	for _, c := range planned {
		override := map[string]any{}
		if o, ok := obj.Spec.Components[c.Name]; ok && o.Values != nil {
			if err := json.Unmarshal(o.Values.Raw, &override); err != nil {
				return nil, outcome.Terminal(tenantv1.ReasonInvalidSpec, "spec.components.%s.values: must be an object: %v", c.Name, err)
			}
		}
		ch, err := r.chart(ctx, obj, c, facts, art)
		if err != nil {
			return nil, err
		}
		vals := bundle.Values(c, facts, override)
		if err := nullOmittedDefaults(c, facts, ch, vals); err != nil {
			return nil, err
		}
		out = append(out, &bootstrap.Component{Def: c, Chart: ch, Values: vals, Digest: digest(ch.Digest, vals)})
	}
	return out, nil
}

// nullOmittedDefaults applies bundle.NullOmittedDefaults with the chart's
// own values, read only for components with a map-valued fact.
func nullOmittedDefaults(c bundle.Component, facts bundle.Facts, ch *helm.Chart, vals map[string]any) error {
	for _, name := range c.Facts {
		if _, isMap := facts[name].(map[string]any); !isMap {
			continue
		}
		loaded, err := ch.Load()
		if err != nil {
			return outcome.Terminal(tenantv1.ReasonChartInvalid, "component %s: %v", c.Name, err)
		}
		bundle.NullOmittedDefaults(c, facts, loaded.Values, vals)
		return nil
	}
	return nil
}

func digest(chartDigest string, vals map[string]any) string {
	raw, _ := json.Marshal(vals) // maps marshal with sorted keys
	h := sha256.New()
	h.Write([]byte(chartDigest))
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// chart builds a component's chart from the packages tree, or pulls it from
// its Helm repository (through a mirror when the TenantBundle names one).
//
// Charts are cached by what fixes their content, so the many reconciles of
// a bootstrap build each chart once: a packages-tree chart by the artifact's
// digest (content-addressed), a repository chart for the current generation
// and reconcile request (a moved tag is picked up like the artifact's).
func (r *Reconciler) chart(ctx context.Context, obj *tenantv1.TenantBundle, c bundle.Component, facts bundle.Facts, art *source.Artifact) (*helm.Chart, error) {
	if c.Chart.Path != "" {
		key := fmt.Sprintf("tree|%s|%+v", art.Digest, c.Chart)
		return r.charts.get(key, func() (*helm.Chart, error) {
			ch, err := helm.BuildFromTree(helm.TreeChart{Tree: art.FS, Path: c.Chart.Path,
				Libraries: c.Chart.Libraries, ValuesFiles: c.Chart.ValuesFiles})
			if err != nil {
				return nil, outcome.Terminal(tenantv1.ReasonChartInvalid, "component %s: %v", c.Name, err)
			}
			return ch, nil
		})
	}
	rc := helm.RepoChart{Repo: c.Chart.Repo, Name: c.Chart.Name, Version: facts.Expand(c.Chart.Version), Fallback: facts.Expand(c.Chart.Fallback)}
	if m, ok := obj.Spec.ChartMirrors[c.Chart.Repo]; ok {
		rc.Repo, rc.Insecure = m.URL, m.Insecure
	}
	key := fmt.Sprintf("repo|%s|%d|%s|%+v", obj.Name, obj.Generation, obj.GetAnnotations()[requestedAtAnnotation], rc)
	return r.charts.get(key, func() (*helm.Chart, error) { return r.pullRepoChart(ctx, c, rc) })
}

func (r *Reconciler) pullRepoChart(ctx context.Context, c bundle.Component, rc helm.RepoChart) (*helm.Chart, error) {
	ch, err := helm.PullRepoChart(ctx, rc)
	switch {
	case errors.Is(err, helm.ErrChartInvalid):
		return nil, outcome.Terminal(tenantv1.ReasonChartInvalid, "component %s: %v", c.Name, err)
	case err != nil:
		return nil, outcome.Retry(tenantv1.ReasonArtifactFailed, fmt.Errorf("component %s: %w", c.Name, err))
	}
	return ch, nil
}

// chartCache holds built charts by key. It is bounded crudely: charts are
// small, keys change only with a new artifact or a new generation, and a
// reset costs one rebuild.
type chartCache struct {
	mu sync.Mutex
	m  map[string]*helm.Chart
}

const chartCacheSize = 256

func (c *chartCache) get(key string, build func() (*helm.Chart, error)) (*helm.Chart, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.m[key]; ok {
		return ch, nil
	}
	ch, err := build()
	if err != nil {
		return nil, err
	}
	if c.m == nil || len(c.m) >= chartCacheSize {
		c.m = map[string]*helm.Chart{}
	}
	c.m[key] = ch
	return ch, nil
}
