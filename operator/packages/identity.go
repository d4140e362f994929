package packages

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// A catalog app is installed by helm-controller impersonating a
// ServiceAccount of the app's own, which holds the built-in `admin` role in
// each of the app's namespaces and nothing else. What the classifier
// misses, the API server refuses: a rendering that reaches beyond its
// namespace fails to install. Only a confirmation of findings that reach
// beyond the namespace binds `cluster-admin` as well; the fingerprint pins
// the confirmation to the rendering it vouches for.
const (
	// CatalogAppLabel marks the HelmReleases and identity objects of a
	// catalog app (a gated Package, not an addon).
	CatalogAppLabel = "tenant.cozystack.io/catalog-app"
	// PrivilegedPodsLabel marks a HelmRelease whose pods need their
	// namespace to allow privileged pods.
	PrivilegedPodsLabel = "tenant.cozystack.io/privileged-pods"

	namespaceAdminRole = "admin"
	clusterAdminRole   = "cluster-admin"
)

// AppServiceAccount is the ServiceAccount a catalog app's HelmReleases
// reconcile as, in each of its namespaces.
func AppServiceAccount(pkg string) string {
	name := "catalog-" + pkg
	if len(name) > validation.DNS1123SubdomainMaxLength {
		name = fmt.Sprintf("catalog-%x", sha256.Sum256([]byte(pkg)))
	}
	return name
}

// AppClusterBinding is the ClusterRoleBinding a confirmation grants.
func AppClusterBinding(pkg string) string { return AppServiceAccount(pkg) }

// appIdentity is what a catalog app's HelmReleases reconcile as: its
// ServiceAccount and namespace admin binding per namespace, and the cluster
// binding when its confirmed findings reach beyond the namespace.
func appIdentity(pkg *cozyv1.Package, desired []*release) (objs []client.Object, cluster *rbacv1.ClusterRoleBinding) {
	name := AppServiceAccount(pkg.Name)
	labels := map[string]string{PackageLabel: pkg.Name, CatalogAppLabel: "true"}
	var namespaces []string
	beyond := false
	for _, rel := range desired {
		if !slices.Contains(namespaces, rel.HR.Namespace) {
			namespaces = append(namespaces, rel.HR.Namespace)
		}
		beyond = beyond || rel.BeyondNamespace
	}
	sort.Strings(namespaces)
	var subjects []rbacv1.Subject
	for _, ns := range namespaces {
		meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
		objs = append(objs,
			&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: meta,
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: namespaceAdminRole},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
			})
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns})
	}
	if beyond {
		cluster = &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: AppClusterBinding(pkg.Name), Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterAdminRole},
			Subjects:   subjects,
		}
	}
	return objs, cluster
}

// ensureIdentity applies the app's identity before its HelmReleases, so
// helm-controller's first attempt already runs with it. It is not owned by
// the Package: the garbage collector would remove it while helm-controller
// still uninstalls as it; prune and finalize remove it once the releases
// that use it are gone.
func (r *Reconciler) ensureIdentity(ctx context.Context, pkg *cozyv1.Package, desired []*release) error {
	objs, cluster := appIdentity(pkg, desired)
	if cluster != nil {
		objs = append(objs, cluster)
	}
	for _, rel := range desired {
		rel.HR.Spec.ServiceAccountName = AppServiceAccount(pkg.Name)
	}
	if len(objs) == 0 {
		return nil
	}
	if _, err := r.Apply.ApplyObjects(ctx, objs...); err != nil {
		return outcome.Retry(ReasonInternalError, fmt.Errorf("the app's identity: %w", err))
	}
	return nil
}

// pruneIdentity removes what of the app's identity its releases no longer
// use: the ServiceAccount and binding of a namespace where none of its
// HelmReleases is left (one being uninstalled still counts), and the
// cluster binding once no release needs it and every release has settled
// (an upgrade that drops privileges deletes what the old version made, with
// the old rights).
func (r *Reconciler) pruneIdentity(ctx context.Context, pkg *cozyv1.Package, desired []*release, settled bool) error {
	var hrs helmv2.HelmReleaseList
	if err := r.List(ctx, &hrs, client.MatchingLabels{PackageLabel: pkg.Name}); err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	inUse := map[string]bool{}
	for _, hr := range hrs.Items {
		inUse[hr.Namespace] = true
	}
	for _, rel := range desired {
		inUse[rel.HR.Namespace] = true
	}
	// Uncached: the operator keeps no informer on every ServiceAccount and
	// binding of the cluster for what changes only with a catalog app.
	sel := client.MatchingLabels{PackageLabel: pkg.Name, CatalogAppLabel: "true"}
	var stale []client.Object
	var sas corev1.ServiceAccountList
	if err := r.APIReader.List(ctx, &sas, sel); err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	for i := range sas.Items {
		if !inUse[sas.Items[i].Namespace] {
			stale = append(stale, &sas.Items[i])
		}
	}
	var rbs rbacv1.RoleBindingList
	if err := r.APIReader.List(ctx, &rbs, sel); err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	for i := range rbs.Items {
		if !inUse[rbs.Items[i].Namespace] {
			stale = append(stale, &rbs.Items[i])
		}
	}
	if _, needed := appIdentity(pkg, desired); needed == nil && (settled || len(hrs.Items) == 0) {
		crb := &rbacv1.ClusterRoleBinding{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: AppClusterBinding(pkg.Name)}, crb)
		if client.IgnoreNotFound(err) != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
		if err == nil && crb.Labels[PackageLabel] == pkg.Name {
			stale = append(stale, crb)
		}
	}
	for _, obj := range stale {
		if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
	}
	return nil
}
