package packages

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// tenantFacts is what Packages take from the TenantBundle: the management
// side's policy for privileged catalog apps, and the cluster values that
// Cozystack layers between a chart's values and a Package's own.
type tenantFacts struct {
	policy  tenantv1.PrivilegedAppsPolicy
	cluster map[string]any // {"_cluster": {...}}
	// addons names the Packages of the addons the TenantBundle enables.
	addons map[string]bool
	// digest is the packages artifact the TenantBundle verified.
	digest string
}

// isAddon says whether pkg is one of the TenantBundle's addons, which the
// bundle vouches for: decided from the TenantBundle and the bundle's own
// catalogue, never from anything written on the Package.
func (f tenantFacts) isAddon(pkg *cozyv1.Package) bool { return f.addons[pkg.Name] }

// tenant reads the facts from the TenantBundles (one per cluster; with
// several, the strictest policy wins and the first by name gives the
// cluster values).
func (r *Reconciler) tenant(ctx context.Context) (tenantFacts, error) {
	var list tenantv1.TenantBundleList
	if err := r.List(ctx, &list); err != nil {
		return tenantFacts{}, outcome.Retry(ReasonInternalError, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	f := tenantFacts{policy: tenantv1.PrivilegedAppsRequireConfirmation, cluster: map[string]any{"_cluster": map[string]any{}}}
	for i, tb := range list.Items {
		if tb.Spec.Catalog.PrivilegedApps == tenantv1.PrivilegedAppsForbidden {
			f.policy = tenantv1.PrivilegedAppsForbidden
		}
		if i > 0 {
			continue
		}
		f.cluster["_cluster"] = ClusterValues(&tb)
		f.addons = r.addonPackages(&tb)
		f.digest = tb.Status.ArtifactDigest
	}
	return f, nil
}

// addonPackages names the Packages the addon tier writes for tb: those of
// the addons its choices enable. Choices the addon tier refuses change
// nothing in the cluster, so the addon Packages already there stay addons:
// then every addon of the bundle's catalogue counts.
func (r *Reconciler) addonPackages(tb *tenantv1.TenantBundle) map[string]bool {
	out := map[string]bool{}
	if r.Bundles == nil {
		return out
	}
	catalogue, err := bundle.LoadAddons(r.Bundles, tb.Spec.Bundle)
	if err != nil {
		return out
	}
	sel, err := catalogue.Select(bundle.ChoicesOf(tb.Spec.Addons))
	if err != nil {
		for i := range catalogue.Addons {
			out[catalogue.Addons[i].PackageName()] = true
		}
		return out
	}
	for _, a := range sel.Enabled {
		out[a.PackageName()] = true
	}
	return out
}

// ClusterValues are the cluster values (`_cluster`) of a tenant, under the
// keys Cozystack's platform writes into its cozystack-values Secret and its
// charts and cozy-lib read (packages/core/platform/templates/apps.yaml,
// packages/library/cozy-lib/templates/_cozyconfig.tpl). Keys the TenantBundle
// has no value for are left out, so a chart's own default applies.
func ClusterValues(tb *tenantv1.TenantBundle) map[string]any {
	c := tb.Spec.Cluster
	out := map[string]any{
		"bundle-name":    tb.Spec.Bundle,
		"cluster-domain": tenantv1.ClusterDomain,
	}
	for k, v := range map[string]string{
		"ipv4-cluster-cidr": c.PodCIDR, "ipv4-service-cidr": c.ServiceCIDR,
		"root-host": c.RootHost, "images-registry": c.ImagesRegistry,
	} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// ensureValues writes the cozystack-values Secret that the releases read
// through valuesFrom into each of their namespaces, as Cozystack's values
// replicator does on the platform. Flux watches it (the label), so a
// changed cluster fact re-reconciles the releases.
func (r *Reconciler) ensureValues(ctx context.Context, desired []*release, cluster map[string]any) error {
	data, err := yaml.Marshal(cluster)
	if err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	seen := map[string]bool{}
	var objs []client.Object
	for _, rel := range desired {
		ns := rel.HR.Namespace
		if len(rel.HR.Spec.ValuesFrom) == 0 || seen[ns] {
			continue
		}
		seen[ns] = true
		objs = append(objs, &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: ValuesSecret, Namespace: ns,
				Labels: map[string]string{"reconcile.fluxcd.io/watch": "Enabled"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"values.yaml": data},
		})
	}
	if len(objs) == 0 {
		return nil
	}
	if _, err := r.Apply.ApplyObjects(ctx, objs...); err != nil {
		return outcome.Retry(ReasonInternalError, fmt.Errorf("%s: %w", ValuesSecret, err))
	}
	return nil
}
