package seeder

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/seed"
	"github.com/cozystack/tenant-operator/internal/source"
	"github.com/cozystack/tenant-operator/internal/values"
	seederv1 "github.com/cozystack/tenant-operator/operator/apis/seeder/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// ManagementPlacedCondition says whether the variant's management-placed
// components run next to the control plane.
const ManagementPlacedCondition = "ManagementPlaced"

// Placement installs the components a variant places on the management
// side (they hold infrastructure credentials, e.g. the KubeVirt CCM and CSI
// controller) next to the tenant's control plane, pointed at the tenant
// with its admin kubeconfig Secret, which never leaves this namespace.
type Placement struct {
	Helm     *helm.Client
	Puller   *source.Puller
	Variants map[string]*bundle.Variant
}

// releaseName is the management-side release of a tenant's component.
func releaseName(ts *seederv1.TenantSeed, c bundle.Component) string {
	return ts.Name + "-" + c.Release.Name
}

// place installs or upgrades the management-placed components of the
// tenant's variant: the one the TenantSeed names, or, for auto, the one the
// tenant resolved from its nodes.
func (r *Reconciler) place(ctx context.Context, ts *seederv1.TenantSeed, tenant client.Client, secretName, key string) error {
	if r.Placement == nil {
		return nil
	}
	name := ts.Spec.Bundle.Variant
	if name == "" || name == "auto" {
		tb := &tenantv1.TenantBundle{}
		if err := tenant.Get(ctx, client.ObjectKey{Name: seed.BundleName}, tb); err != nil || tb.Status.Variant == "" {
			conditions.MarkUnknown(ts, ManagementPlacedCondition, "VariantUnknown", "waiting for the tenant to resolve its variant")
			return nil
		}
		name = tb.Status.Variant
	}
	v := r.Placement.Variants[name]
	if v == nil {
		return outcome.Terminal(ReasonInvalidSpec, "spec.bundle.variant: unknown variant %q", name)
	}
	var comps []bundle.Component
	for _, c := range v.Components {
		if c.Placement == bundle.PlacementManagement {
			comps = append(comps, c)
		}
	}
	if len(comps) == 0 {
		conditions.MarkTrue(ts, ManagementPlacedCondition, ReasonSeeded, "variant %s places nothing on the management side", name)
		return nil
	}
	p := ts.Spec.Bundle.Packages
	art, err := r.Placement.Puller.Pull(ctx, source.Ref{URL: p.URL, Tag: p.Tag, Digest: p.Digest, Insecure: p.Insecure})
	if err != nil {
		return outcome.Retry(ReasonInvalidSpec, fmt.Errorf("spec.bundle.packages: %w", err))
	}
	var names []string
	for _, c := range comps {
		if err := r.installComponent(ctx, ts, c, art.FS, secretName, key); err != nil {
			conditions.MarkFalse(ts, ManagementPlacedCondition, "InstallFailed", "%s: %v", c.Name, err)
			return outcome.Retry("InstallFailed", err)
		}
		names = append(names, releaseName(ts, c))
	}
	sort.Strings(names)
	conditions.MarkTrue(ts, ManagementPlacedCondition, ReasonSeeded, "variant %s: %s", name, strings.Join(names, ", "))
	return nil
}

// installComponent installs the release, or upgrades it when the chart or
// the values changed (their digest is stored on the revision).
func (r *Reconciler) installComponent(ctx context.Context, ts *seederv1.TenantSeed, c bundle.Component, tree fs.FS, secretName, key string) error {
	ch, err := helm.BuildFromTree(helm.TreeChart{Tree: tree, Path: c.Chart.Path, Libraries: c.Chart.Libraries, ValuesFiles: c.Chart.ValuesFiles})
	if err != nil {
		return err
	}
	vals := values.Merge(c.Values, map[string]any{
		"kubeconfigSecret": secretName, "kubeconfigKey": key, "clusterName": ts.Name,
	})
	raw, err := json.Marshal(vals)
	if err != nil {
		return err
	}
	digest := fmt.Sprintf("%x", sha256.Sum256(append([]byte(ch.Digest), raw...)))[:32]
	req := helm.Request{Namespace: ts.Namespace, Name: releaseName(ts, c), Chart: ch, Values: vals, Digest: digest}
	rel, err := r.Placement.Helm.Observe(ctx, req.Namespace, req.Name)
	switch {
	case err != nil:
		return err
	case rel == nil || !rel.Deployed:
		_, err = r.Placement.Helm.Install(ctx, req)
	case rel.Digest != digest:
		_, err = r.Placement.Helm.Upgrade(ctx, req)
	}
	return err
}

// unplace removes the management-placed releases of a tenant whose control
// plane is gone. Best effort, no finalizer: a release that cannot be
// removed now is retried on the next event, and never blocks a deletion.
func (r *Reconciler) unplace(ts *seederv1.TenantSeed) error {
	if r.Placement == nil {
		return nil
	}
	for _, v := range r.Placement.Variants {
		for _, c := range v.Components {
			if c.Placement != bundle.PlacementManagement {
				continue
			}
			if err := r.Placement.Helm.Uninstall(ts.Namespace, releaseName(ts, c)); err != nil {
				return outcome.Retry("UninstallFailed", err)
			}
		}
	}
	conditions.Delete(ts, ManagementPlacedCondition)
	return nil
}
