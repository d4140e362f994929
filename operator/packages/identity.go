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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/privilege"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// A catalog app is installed by helm-controller impersonating a
// ServiceAccount of the app's own, which holds the built-in `admin` role in
// each of the app's namespaces and nothing else. What the classifier
// misses, the API server refuses: a rendering that reaches beyond its
// namespace fails to install. Beyond the namespace it gets rights on the
// unprivileged objects its rendering places there, by name, and, with a
// confirmation of findings that reach beyond the namespace, on the kinds
// of those findings; the fingerprint pins the confirmation to the
// rendering it vouches for.
const (
	// CatalogAppLabel marks the HelmReleases and identity objects of a
	// catalog app (a gated Package, not an addon).
	CatalogAppLabel = "tenant.cozystack.io/catalog-app"
	// PrivilegedPodsLabel marks a HelmRelease whose pods need their
	// namespace to allow privileged pods.
	PrivilegedPodsLabel = "tenant.cozystack.io/privileged-pods"

	namespaceAdminRole = "admin"
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

// AppClusterBinding names the ClusterRole a confirmation grants, and its
// ClusterRoleBinding.
func AppClusterBinding(pkg string) string { return AppServiceAccount(pkg) }

// appIdentity is what a catalog app's HelmReleases reconcile as: its
// ServiceAccount and namespace admin binding per namespace, and, when it
// needs rights beyond its namespaces, a ClusterRole with those rules
// (privilege.Grants) bound to those ServiceAccounts.
func appIdentity(pkg *cozyv1.Package, desired []*release, rules []rbacv1.PolicyRule) (namespaced []client.Object, cluster []client.Object) {
	name := AppServiceAccount(pkg.Name)
	labels := map[string]string{PackageLabel: pkg.Name, CatalogAppLabel: "true"}
	var namespaces []string
	for _, rel := range desired {
		if !slices.Contains(namespaces, rel.HR.Namespace) {
			namespaces = append(namespaces, rel.HR.Namespace)
		}
	}
	sort.Strings(namespaces)
	var subjects []rbacv1.Subject
	for _, ns := range namespaces {
		meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
		namespaced = append(namespaced,
			&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: meta,
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: namespaceAdminRole},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
			})
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns})
	}
	if len(rules) > 0 {
		meta := metav1.ObjectMeta{Name: AppClusterBinding(pkg.Name), Labels: labels}
		cluster = []client.Object{
			&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
				ObjectMeta: meta, Rules: rules},
			&rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
				ObjectMeta: meta,
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AppClusterBinding(pkg.Name)},
				Subjects:   subjects,
			},
		}
	}
	return namespaced, cluster
}

// grants are the cluster-wide rules the releases need beyond the admin role
// of their namespaces (privilege.Grants): for what their confirmed findings
// reach, and for the unprivileged objects they place outside the namespace.
func (r *Reconciler) grants(desired []*release) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, rel := range desired {
		rules := privilege.Grants(rel.HR.Namespace, rel.Reach, rel.Placed, func(gk schema.GroupKind) (privilege.Resource, bool) {
			if d, ok := rel.Defined[gk]; ok {
				return d, true
			}
			m, err := r.RESTMapper().RESTMapping(gk)
			if err != nil {
				return privilege.Resource{}, false
			}
			return privilege.Resource{Name: m.Resource.Resource, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, true
		}, rel.CallsLookup)
		for _, rule := range rules {
			if !slices.ContainsFunc(out, func(x rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(x, rule) }) {
				out = append(out, rule)
			}
		}
	}
	return out
}

// ensureIdentity applies the app's identity before its HelmReleases, so
// helm-controller's first attempt already runs with it. It is not owned by
// the Package: the garbage collector would remove it while helm-controller
// still uninstalls as it; prune and finalize remove it once the releases
// that use it are gone. Cluster rules only grow here: an upgrade that
// needs fewer still deletes what the old version made with the old rights,
// and pruneIdentity narrows them once every release has settled.
func (r *Reconciler) ensureIdentity(ctx context.Context, pkg *cozyv1.Package, desired []*release) error {
	rules := r.grants(desired)
	cur := &rbacv1.ClusterRole{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: AppClusterBinding(pkg.Name)}, cur)
	if client.IgnoreNotFound(err) != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	if err == nil && cur.Labels[PackageLabel] == pkg.Name {
		for _, rule := range cur.Rules {
			if !slices.ContainsFunc(rules, func(x rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(x, rule) }) {
				rules = append(rules, rule)
			}
		}
	}
	namespaced, cluster := appIdentity(pkg, desired, rules)
	for _, rel := range desired {
		rel.HR.Spec.ServiceAccountName = AppServiceAccount(pkg.Name)
	}
	objs := append(namespaced, cluster...)
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
// HelmReleases is left (one being uninstalled still counts), and, once
// every release has settled (or none is left), the cluster rules no release
// needs.
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
	for _, list := range []client.ObjectList{&corev1.ServiceAccountList{}, &rbacv1.RoleBindingList{}} {
		if err := r.APIReader.List(ctx, list, sel); err != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			if obj := o.(client.Object); !inUse[obj.GetNamespace()] {
				stale = append(stale, obj)
			}
			return nil
		}); err != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
	}
	if settled || len(hrs.Items) == 0 {
		rules := r.grants(desired)
		cur := &rbacv1.ClusterRole{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: AppClusterBinding(pkg.Name)}, cur)
		if client.IgnoreNotFound(err) != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
		switch {
		case err != nil || cur.Labels[PackageLabel] != pkg.Name:
		case len(rules) == 0:
			stale = append(stale, cur, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: AppClusterBinding(pkg.Name)}})
		case !equality.Semantic.DeepEqual(cur.Rules, rules):
			_, cluster := appIdentity(pkg, desired, rules)
			if _, err := r.Apply.ApplyObjects(ctx, cluster...); err != nil {
				return outcome.Retry(ReasonInternalError, fmt.Errorf("narrowing the app's cluster rules: %w", err))
			}
		}
	}
	for _, obj := range stale {
		if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
	}
	return nil
}
