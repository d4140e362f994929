// Package catalog holds the catalog tier's controller: it registers the
// catalog PackageSources the management side lists in the TenantBundle
// (spec.catalog.sources) and reports CatalogReady. Tenant admins install
// apps from them, and from PackageSources of their own, as Packages; the
// Package controller (operator/packages) installs those and holds any whose
// rendering is privileged until confirmed (or refuses it when the
// management side forbids privileged apps).
package catalog

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/statuswrite"
	"github.com/cozystack/tenant-operator/operator/addons"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// FieldOwner owns the catalog PackageSources and the CatalogReady
// condition.
const FieldOwner = "tenant-operator-catalog"

// Reconciler registers catalog PackageSources.
type Reconciler struct {
	client.Client
	// Apply applies as FieldOwner.
	Apply *apply.Engine

	// written is the CatalogReady this process last wrote, per
	// TenantBundle (see statuswrite).
	written statuswrite.Memo[*metav1.Condition]
}

// SetupWithManager watches TenantBundles and the PackageSources they own,
// so a deleted or edited source is restored on the event.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("catalog").
		WithOptions(controller.Options{RateLimiter: outcome.RateLimiter()}).
		For(&tenantv1.TenantBundle{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&cozyv1.PackageSource{}).
		Complete(r)
}

// Reconcile applies the sources, prunes the ones no longer listed and
// writes CatalogReady.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tb := &tenantv1.TenantBundle{}
	if err := r.Get(ctx, req.NamespacedName, tb); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tb.DeletionTimestamp.IsZero() || tb.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	before := conditions.Get(tb, tenantv1.CatalogReadyCondition)
	err := r.register(ctx, tb)
	if err != nil {
		reason, _ := outcome.Classify(err)
		conditions.MarkFalse(tb, tenantv1.CatalogReadyCondition, reason, "%v", err)
	} else {
		conditions.MarkTrue(tb, tenantv1.CatalogReadyCondition, tenantv1.ReasonSucceeded, "%d catalog source(s) registered", len(tb.Spec.Catalog.Sources))
	}
	after := conditions.Get(tb, tenantv1.CatalogReadyCondition)
	if !r.written.Unchanged(req.NamespacedName, tb.UID, before, after) {
		stored, perr := r.writeCondition(ctx, tb, after)
		if perr == nil {
			r.written.Wrote(req.NamespacedName, tb.UID, stored)
		}
		err = outcome.AfterStatusWrite(err, perr)
	}
	if _, terminal := outcome.Classify(err); terminal {
		return ctrl.Result{}, nil // reported; a spec change brings the next attempt
	}
	return ctrl.Result{}, err
}

// writeCondition applies CatalogReady alone with server-side apply as
// FieldOwner, which owns exactly that entry of the conditions map, and
// returns it as stored.
func (r *Reconciler) writeCondition(ctx context.Context, tb *tenantv1.TenantBundle, c *metav1.Condition) (*metav1.Condition, error) {
	return apply.ApplyCondition(ctx, r.Client, tb, tenantv1.GroupVersion.WithKind("TenantBundle"), *c, FieldOwner)
}

func (r *Reconciler) register(ctx context.Context, tb *tenantv1.TenantBundle) error {
	want := map[string]bool{}
	var objs []client.Object
	var conflicts []string
	for _, src := range tb.Spec.Catalog.Sources {
		want[src.Name] = true
		cur := &cozyv1.PackageSource{}
		err := r.Get(ctx, client.ObjectKey{Name: src.Name}, cur)
		switch {
		case err == nil && !metav1.IsControlledBy(cur, tb):
			// A tenant admin's (or an addon's) PackageSource is not ours to
			// overwrite.
			conflicts = append(conflicts, src.Name)
			continue
		case err != nil && !apierrors.IsNotFound(err):
			return outcome.Retry(tenantv1.ReasonInstalling, err)
		}
		objs = append(objs, packageSource(tb, src))
	}
	if len(objs) > 0 {
		if _, err := r.Apply.ApplyObjects(ctx, objs...); err != nil {
			return outcome.Retry(tenantv1.ReasonInstalling, fmt.Errorf("catalog sources: %w", err))
		}
	}
	var list cozyv1.PackageSourceList
	if err := r.List(ctx, &list, client.HasLabels{tenantv1.CatalogLabel}); err != nil {
		return outcome.Retry(tenantv1.ReasonInstalling, err)
	}
	for i := range list.Items {
		ps := &list.Items[i]
		// Installed apps are not touched: their Packages wait for the source.
		if !want[ps.Name] && metav1.IsControlledBy(ps, tb) {
			if err := r.Delete(ctx, ps); client.IgnoreNotFound(err) != nil {
				return outcome.Retry(tenantv1.ReasonInstalling, err)
			}
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return outcome.Terminal(tenantv1.ReasonCatalogConflict,
			"spec.catalog.sources: PackageSource(s) %s exist and are not the catalog's; rename the source or remove the other object", strings.Join(conflicts, ", "))
	}
	return nil
}

// packageSource is a catalog source as a PackageSource, pointing at the
// packages artifact unless the source names another one. It is owned by the
// TenantBundle, so it goes with it.
func packageSource(tb *tenantv1.TenantBundle, src tenantv1.CatalogSource) *cozyv1.PackageSource {
	ref := src.SourceRef
	if ref == nil {
		key := addons.PackagesRepositoryKey(tb)
		ref = &cozyv1.PackageSourceRef{Kind: sourcev1.OCIRepositoryKind, Name: key.Name, Namespace: key.Namespace, Path: "/"}
	}
	return &cozyv1.PackageSource{
		TypeMeta: metav1.TypeMeta{APIVersion: cozyv1.GroupVersion.String(), Kind: "PackageSource"},
		ObjectMeta: metav1.ObjectMeta{Name: src.Name, Labels: map[string]string{tenantv1.CatalogLabel: "management"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: tenantv1.GroupVersion.String(), Kind: "TenantBundle", Name: tb.Name, UID: tb.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}}},
		Spec: cozyv1.PackageSourceSpec{SourceRef: ref, Variants: src.Variants},
	}
}
