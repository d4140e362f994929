package addons

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/flux"
	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/packages"
)

// AddonLabel marks the PackageSources and Packages the operator writes for
// addons, with the addon's name.
const AddonLabel = tenantv1.AddonLabel

// PackagesRepository is the OCIRepository of the packages artifact that
// addon PackageSources point at.
const PackagesRepository = "cozystack-packages"

// addons writes a Package (and its PackageSource) for every enabled addon
// and summarises them in AddonsReady. A refused choice (unknown addon, a
// disabled dependency of an enabled addon) changes nothing in the cluster.
func (r *Reconciler) addons(ctx context.Context, obj *tenantv1.TenantBundle) error {
	digest := obj.Status.ArtifactDigest
	if digest == "" {
		conditions.MarkUnknown(obj, tenantv1.AddonsReadyCondition, tenantv1.ReasonAddonsNotReady, "waiting for the packages artifact")
		return nil
	}
	catalogue, err := bundle.LoadAddons(r.Bundles, obj.Spec.Bundle)
	if err != nil {
		return outcome.Terminal(tenantv1.ReasonUnknownBundle, "spec.bundle: %v", err)
	}
	choices := bundle.ChoicesOf(obj.Spec.Addons)
	sel, err := catalogue.Select(choices)
	var refused *bundle.RefusedError
	if errors.As(err, &refused) {
		conditions.MarkFalse(obj, tenantv1.AddonsReadyCondition, refused.Reason, "%s", refused.Message)
		return outcome.Terminal(refused.Reason, "%s", refused.Message)
	}
	if err != nil {
		return outcome.Terminal(tenantv1.ReasonInvalidSpec, "addons: %v", err)
	}
	mains, err := mainValues(obj, sel, choices)
	if err != nil {
		return err
	}
	networkReady := conditions.IsTrue(obj, tenantv1.NetworkReadyCondition)
	// Sources first: a Package is only reconciled with its PackageSource.
	var sources, pkgs []client.Object
	var held []string
	repo := r.packagesRepository(obj, digest)
	sources = append(sources, repo)
	for _, a := range sel.Enabled {
		if a.AfterNetwork && !networkReady {
			held = append(held, a.Name)
			continue
		}
		ps, pkg := addonPackage(catalogue, a, sel.IsEnabled, mains[a.Name], repo)
		sources, pkgs = append(sources, ps), append(pkgs, pkg)
	}
	if err := r.applyAddons(ctx, sources, pkgs); err != nil {
		return err
	}
	if err := r.pruneAddons(ctx, sel); err != nil {
		return err
	}
	setAddonsCondition(obj, r.addonHealth(ctx, sel, held))
	return nil
}

// packagesRepository is the packages artifact as a Flux OCIRepository,
// pinned to the digest the operator verified, so that the operator's
// charts and anything Flux builds from it come from the same bytes.
func (r *Reconciler) packagesRepository(obj *tenantv1.TenantBundle, digest string) *sourcev1.OCIRepository {
	p := obj.Spec.Packages
	repo := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: PackagesRepository, Namespace: flux.Namespace},
		Spec: sourcev1.OCIRepositorySpec{
			URL:       p.URL,
			Reference: &sourcev1.OCIRepositoryRef{Tag: p.Tag, Digest: digest},
			Insecure:  p.Insecure,
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
		},
	}
	if s := p.PullSecretRef; s != nil {
		repo.Spec.SecretRef = &meta.LocalObjectReference{Name: s.Name}
	}
	repo.Namespace = PackagesRepositoryKey(obj).Namespace
	return repo
}

// PackagesRepositoryKey locates the packages artifact's OCIRepository. A
// Secret can only be referenced from its own namespace, so with a pull
// secret it lives beside it.
func PackagesRepositoryKey(obj *tenantv1.TenantBundle) client.ObjectKey {
	if s := obj.Spec.Packages.PullSecretRef; s != nil {
		return client.ObjectKey{Namespace: s.Namespace, Name: PackagesRepository}
	}
	return client.ObjectKey{Namespace: flux.Namespace, Name: PackagesRepository}
}

// platformFacts are the facts addon values may name or switch on.
func platformFacts(obj *tenantv1.TenantBundle) bundle.Facts {
	p := obj.Spec.Platform
	domain := p.ClusterDomain
	if domain == "" {
		domain = "cozy.local" // as apps/kubernetes defaults it
	}
	return bundle.Facts{
		bundle.FactClusterName: p.ClusterName, bundle.FactTenantNamespace: p.Namespace,
		bundle.FactMonitoringNamespace: p.MonitoringNamespace, bundle.FactPlatformClusterDomain: domain,
		bundle.FactGatewayAPI: obj.Spec.Cluster.GatewayAPI,
	}
}

// mainValues computes every enabled addon's main values. An addon that
// needs a platform fact the TenantBundle lacks is refused, naming the field:
// only the management side's seed can fix it.
func mainValues(obj *tenantv1.TenantBundle, sel *bundle.Selection, choices map[string]bundle.Choice) (map[string]*apiextensionsv1.JSON, error) {
	facts := platformFacts(obj)
	enabled := map[string]bool{}
	for _, a := range sel.Enabled {
		enabled[a.Name] = true
	}
	out := map[string]*apiextensionsv1.JSON{}
	var refusals []string
	for _, a := range sel.Enabled {
		v, missing, err := a.MainValues(facts, enabled, choices)
		if err != nil {
			conditions.MarkFalse(obj, tenantv1.AddonsReadyCondition, tenantv1.ReasonInvalidSpec, "%v", err)
			return nil, outcome.Terminal(tenantv1.ReasonInvalidSpec, "%v", err)
		}
		if len(missing) > 0 {
			refusals = append(refusals, bundle.MissingFactsMessage(a.Name, missing))
		}
		out[a.Name] = v
	}
	if len(refusals) > 0 {
		msg := strings.Join(refusals, "; ")
		conditions.MarkFalse(obj, tenantv1.AddonsReadyCondition, tenantv1.ReasonMissingPlatformFacts, "%s", msg)
		return nil, outcome.Terminal(tenantv1.ReasonMissingPlatformFacts, "%s", msg)
	}
	return out, nil
}

// addonPackage renders an addon as Cozystack renders a system package: a
// PackageSource with one variant and a Package selecting it; values go to
// its main component.
func addonPackage(c *bundle.Addons, a *bundle.Addon, enabled func(string) bool, values *apiextensionsv1.JSON, repo *sourcev1.OCIRepository) (*cozyv1.PackageSource, *cozyv1.Package) {
	labels := map[string]string{AddonLabel: a.Name}
	variant := cozyv1.Variant{Name: packages.DefaultVariant, Components: a.Components}
	for _, d := range a.Needs(enabled) {
		variant.DependsOn = append(variant.DependsOn, c.Get(d).PackageName())
	}
	for _, l := range c.Libraries {
		for _, comp := range a.Components {
			if slices.Contains(comp.Libraries, l.Name) && !slices.Contains(variant.Libraries, l) {
				variant.Libraries = append(variant.Libraries, l)
			}
		}
	}
	ps := &cozyv1.PackageSource{
		TypeMeta: metav1.TypeMeta{APIVersion: cozyv1.GroupVersion.String(), Kind: "PackageSource"},
		ObjectMeta: metav1.ObjectMeta{Name: a.PackageName(), Labels: labels,
			// Tenant clusters have no platform values Secret to layer in.
			Annotations: map[string]string{packages.SkipValuesAnnotation: "true"}},
		Spec: cozyv1.PackageSourceSpec{
			SourceRef: &cozyv1.PackageSourceRef{Kind: sourcev1.OCIRepositoryKind, Name: repo.Name, Namespace: repo.Namespace, Path: "/"},
			Variants:  []cozyv1.Variant{variant},
		},
	}
	pkg := &cozyv1.Package{
		TypeMeta:   metav1.TypeMeta{APIVersion: cozyv1.GroupVersion.String(), Kind: "Package"},
		ObjectMeta: metav1.ObjectMeta{Name: a.PackageName(), Labels: labels},
		Spec:       cozyv1.PackageSpec{Variant: packages.DefaultVariant},
	}
	if values != nil {
		pkg.Spec.Components = map[string]cozyv1.PackageComponent{a.Components[0].Name: {Values: values}}
	}
	return ps, pkg
}

// applyAddons applies the addon objects unless exactly these were applied
// last: a reconcile that changes nothing about addons costs no request.
// Any event on an addon Package resets the memory (see the watch).
func (r *Reconciler) applyAddons(ctx context.Context, stages ...[]client.Object) error {
	raw, err := json.Marshal(stages)
	if err != nil {
		return err
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(raw))
	if r.addonsApplied.Load() == sum {
		return nil
	}
	for _, objs := range stages {
		if _, err := r.Apply.ApplyObjects(ctx, objs...); err != nil {
			return outcome.Retry(tenantv1.ReasonAddonsNotReady, fmt.Errorf("addons: %w", err))
		}
	}
	r.addonsApplied.Store(sum)
	return nil
}

// pruneAddons deletes the Packages and PackageSources of addons no longer
// enabled; their HelmReleases go with them (owner references) and
// helm-controller uninstalls the releases.
func (r *Reconciler) pruneAddons(ctx context.Context, sel *bundle.Selection) error {
	enabled := map[string]bool{}
	for _, a := range sel.Enabled {
		enabled[a.Name] = true
	}
	var pkgs cozyv1.PackageList
	if err := r.List(ctx, &pkgs, client.HasLabels{AddonLabel}); err != nil {
		return outcome.Retry(tenantv1.ReasonAddonsNotReady, err)
	}
	for i := range pkgs.Items {
		p := &pkgs.Items[i]
		if enabled[p.Labels[AddonLabel]] {
			continue
		}
		ps := &cozyv1.PackageSource{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}
		for _, o := range []client.Object{p, ps} {
			if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				return outcome.Retry(tenantv1.ReasonAddonsNotReady, err)
			}
		}
		r.addonsApplied.Store("")
	}
	return nil
}

// addonHealth lists what is not Ready yet, addon by addon, and the first
// failure Flux reported.
type addonHealth struct {
	total    int
	notReady []string
	failed   string
}

func (r *Reconciler) addonHealth(ctx context.Context, sel *bundle.Selection, held []string) addonHealth {
	h := addonHealth{total: len(sel.Enabled)}
	for _, name := range held {
		h.notReady = append(h.notReady, name+": waiting for the network tier (it serves a webhook or an aggregated API)")
	}
	for _, a := range sel.Enabled {
		if slices.Contains(held, a.Name) {
			continue
		}
		pkg := &cozyv1.Package{}
		// Live: the cache may still hold the Package as it was before this
		// reconcile applied it, its old generation observed and Ready.
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: a.PackageName()}, pkg); err != nil {
			h.notReady = append(h.notReady, a.Name+": Package not observed yet")
			continue
		}
		ready := apimeta.FindStatusCondition(pkg.Status.Conditions, meta.ReadyCondition)
		switch {
		case ready == nil || pkg.Status.ObservedGeneration != pkg.Generation:
			h.notReady = append(h.notReady, a.Name+": reconciling")
		case ready.Status == metav1.ConditionTrue:
		default:
			msg := fmt.Sprintf("%s: %s: %s", a.Name, ready.Reason, ready.Message)
			h.notReady = append(h.notReady, msg)
			if h.failed == "" && ready.Reason != packages.ReasonProgressing && ready.Reason != packages.ReasonDependenciesNotReady {
				h.failed = msg
			}
		}
	}
	return h
}

func setAddonsCondition(obj *tenantv1.TenantBundle, h addonHealth) {
	switch {
	case h.failed != "":
		conditions.MarkFalse(obj, tenantv1.AddonsReadyCondition, tenantv1.ReasonAddonFailed, "%s", strings.Join(h.notReady, "; "))
	case len(h.notReady) > 0:
		conditions.MarkFalse(obj, tenantv1.AddonsReadyCondition, tenantv1.ReasonAddonsNotReady, "%s", strings.Join(h.notReady, "; "))
	default:
		conditions.MarkTrue(obj, tenantv1.AddonsReadyCondition, tenantv1.ReasonSucceeded, "%d addon(s) ready", h.total)
	}
}
