package packages

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// NamespaceFinalizer holds a Package until it has given up its say on its
// namespaces' labels.
const NamespaceFinalizer = "tenant.cozystack.io/namespace-labels"

// ensureNamespaces applies the namespaces of the releases, labelled as
// Cozystack labels them, and sets the Pod Security level each must enforce
// (see podSecurity). Each Package applies its labels as its own field
// manager, so a label several Packages ask for stays until the last of them
// stops asking.
func (r *Reconciler) ensureNamespaces(ctx context.Context, pkg *cozyv1.Package, desired []*release) error {
	var names []string
	for _, rel := range desired {
		if !slices.Contains(names, rel.HR.Namespace) {
			names = append(names, rel.HR.Namespace)
		}
	}
	sort.Strings(names)
	objs := make([]client.Object, 0, len(names))
	for _, name := range names {
		ns := &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{},
				// A namespace outlives the release that made it: other
				// packages may share it.
				Annotations: map[string]string{"helm.sh/resource-policy": "keep"}},
		}
		if !strings.HasPrefix(name, "tenant-") {
			ns.Labels[SystemLabel] = "true"
		}
		objs = append(objs, ns)
	}
	if len(objs) == 0 {
		return nil
	}
	if !controllerutil.ContainsFinalizer(pkg, NamespaceFinalizer) {
		// On a copy: the response would overwrite the status computed so far.
		cp := pkg.DeepCopy()
		before := cp.DeepCopy()
		controllerutil.AddFinalizer(cp, NamespaceFinalizer)
		if err := r.Patch(ctx, cp, client.MergeFrom(before), client.FieldOwner(apply.FieldOwner)); err != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
		pkg.Finalizers = cp.Finalizers
	}
	if _, err := r.Apply.As(namespaceManager(pkg.Name)).ApplyObjects(ctx, objs...); err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	return r.podSecurity(ctx, names, pkg.Name, desired)
}

// podSecurity sets the Pod Security level each of namespaces enforces,
// from every Package's releases there (pkg's own as desired, the others'
// as their HelmReleases say): privileged while a release needs privileged
// pods (an addon's, or a confirmed catalog app's), baseline while a catalog
// app lives there, so that the API server refuses a privileged pod the
// classifier missed; none of its own otherwise. One field manager decides
// for all Packages, so they never fight over the label. A namespace the
// platform's own components share is never lowered to baseline (a catalog
// app there is a finding of its own), and a stricter level someone else set
// is kept.
func (r *Reconciler) podSecurity(ctx context.Context, namespaces []string, pkg string, desired []*release) error {
	engine := r.Apply.As(podSecurityManager)
	for _, name := range namespaces {
		var hrs helmv2.HelmReleaseList
		if err := r.List(ctx, &hrs, client.InNamespace(name), client.HasLabels{PackageLabel}); err != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
		privileged, catalog := false, false
		for _, hr := range hrs.Items {
			if hr.Labels[PackageLabel] == pkg {
				continue
			}
			privileged = privileged || hr.Labels[PrivilegedPodsLabel] == "true"
			catalog = catalog || hr.Labels[CatalogAppLabel] == "true"
		}
		for _, rel := range desired {
			if rel.HR.Namespace == name {
				privileged = privileged || rel.HR.Labels[PrivilegedPodsLabel] == "true"
				catalog = catalog || rel.HR.Labels[CatalogAppLabel] == "true"
			}
		}
		level := podSecurityLevel(privileged, catalog && !r.PlatformNamespaces.Has(name))
		cur := &corev1.Namespace{}
		// Uncached: the operator keeps no informer on namespaces.
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
			if apierrors.IsNotFound(err) {
				continue // applying would create it
			}
			return outcome.Retry(ReasonInternalError, err)
		}
		if level == "baseline" && cur.Labels[podSecurityLabel] == "restricted" {
			continue
		}
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if level != "" {
			ns.Labels[podSecurityLabel] = level
		}
		if _, err := engine.ApplyObjects(ctx, ns); err != nil {
			return outcome.Retry(ReasonInternalError, fmt.Errorf("namespace %s: pod security: %w", name, err))
		}
	}
	return nil
}

// podSecurityLevel is the level a namespace enforces for what runs there.
func podSecurityLevel(privilegedPods, catalogApp bool) string {
	switch {
	case privilegedPods:
		return "privileged"
	case catalogApp:
		return "baseline"
	}
	return ""
}

// podSecurityManager is the one field manager of the Pod Security label.
const podSecurityManager = "tenant-operator-pod-security"

const podSecurityLabel = "pod-security.kubernetes.io/enforce"

// namespaceManager is the field manager of one Package's say on namespaces.
func namespaceManager(pkg string) string {
	m := "tenant-operator-package." + pkg
	if len(m) > 128 { // the API server's limit
		m = fmt.Sprintf("tenant-operator-package.%x", sha256.Sum256([]byte(pkg)))
	}
	return m
}

// releaseNamespaces gives up the Package's say on the namespaces it no
// longer installs into (all of them when keep is nil): labels only it asked
// for are removed, the namespaces themselves stay.
func (r *Reconciler) releaseNamespaces(ctx context.Context, pkg string, keep map[string]bool) error {
	var list corev1.NamespaceList
	// Uncached: the cache strips managed fields.
	if err := r.APIReader.List(ctx, &list); err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	engine := r.Apply.As(namespaceManager(pkg))
	var released []string
	for i := range list.Items {
		ns := &list.Items[i]
		if keep[ns.Name] || !slices.ContainsFunc(ns.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == namespaceManager(pkg)
		}) {
			continue
		}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		if err := engine.Release(ctx, ns); client.IgnoreNotFound(err) != nil {
			return outcome.Retry(ReasonInternalError, fmt.Errorf("namespace %s: %w", ns.Name, err))
		}
		released = append(released, ns.Name)
	}
	// What the others there need, without this Package.
	return r.podSecurity(ctx, released, pkg, nil)
}

// applyReleases applies each release's ExternalArtifact, records where its
// chart is served, then applies the HelmRelease that points at it.
func (r *Reconciler) applyReleases(ctx context.Context, pkg *cozyv1.Package, desired []*release) error {
	for _, rel := range desired {
		if _, err := r.Apply.ApplyObjects(ctx, rel.EA); err != nil {
			return outcome.Retry(ReasonHelmReleaseFailed, err)
		}
		if err := r.publish(ctx, rel); err != nil {
			return outcome.Retry(ReasonHelmReleaseFailed, err)
		}
		if _, err := r.Apply.ApplyObjects(ctx, rel.HR); err != nil {
			return outcome.Retry(ReasonHelmReleaseFailed, fmt.Errorf("HelmRelease %s/%s: %w", rel.HR.Namespace, rel.HR.Name, err))
		}
	}
	return nil
}

// publish writes the ExternalArtifact's status, as its producer does: the
// artifact and Ready. Skipped when it already says the same.
func (r *Reconciler) publish(ctx context.Context, rel *release) error {
	cur := &sourcev1.ExternalArtifact{}
	// Uncached: the object may be seconds old.
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rel.EA), cur); err != nil {
		return err
	}
	if a := cur.Status.Artifact; a != nil && a.Digest == rel.Artifact.Digest && a.URL == rel.Artifact.URL {
		return nil
	}
	before := cur.DeepCopy()
	cur.Status.Artifact = rel.Artifact
	meta := metav1.Condition{Type: ReadyCondition, Status: metav1.ConditionTrue, Reason: ReasonSucceeded,
		Message: "stored artifact for revision " + rel.Artifact.Revision, ObservedGeneration: cur.Generation,
		LastTransitionTime: metav1.Now()}
	cur.Status.Conditions = []metav1.Condition{meta}
	return r.Status().Patch(ctx, cur, client.MergeFrom(before), client.FieldOwner(apply.FieldOwner))
}

// prune deletes the HelmReleases (and chart artifacts) of this Package that
// are no longer desired: a disabled component or another variant.
// helm-controller's finalizer uninstalls each release.
func (r *Reconciler) prune(ctx context.Context, pkg *cozyv1.Package, desired []*release) error {
	keep := map[client.ObjectKey]bool{}
	for _, rel := range desired {
		keep[client.ObjectKeyFromObject(rel.HR)] = true
		keep[client.ObjectKeyFromObject(rel.EA)] = true
	}
	sel := client.MatchingLabels{PackageLabel: pkg.Name}
	var hrs helmv2.HelmReleaseList
	if err := r.List(ctx, &hrs, sel); err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	var eas sourcev1.ExternalArtifactList
	if err := r.List(ctx, &eas, sel); err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	var stale []client.Object
	left := false
	for i := range hrs.Items {
		stale = append(stale, &hrs.Items[i])
		left = left || !keep[client.ObjectKeyFromObject(&hrs.Items[i])]
	}
	for i := range eas.Items {
		stale = append(stale, &eas.Items[i])
	}
	for _, obj := range stale {
		if keep[client.ObjectKeyFromObject(obj)] {
			continue
		}
		if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return outcome.Retry(ReasonInternalError, err)
		}
	}
	if !left {
		return nil
	}
	inUse := map[string]bool{}
	for _, rel := range desired {
		inUse[rel.HR.Namespace] = true
	}
	return r.releaseNamespaces(ctx, pkg.Name, inUse)
}
