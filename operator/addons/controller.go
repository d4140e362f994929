// Package addons holds the addon tier's controller: it runs Flux in the
// tenant (from manifests/flux) and turns the TenantBundle's addon choices
// into Packages, which operator/packages turns into HelmReleases. It has
// its own workqueue, so nothing it does delays the bootstrap tiers, and it
// writes only the AddonsReady condition, with its own field manager.
package addons

import (
	"context"
	"io/fs"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/statuswrite"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// FieldOwner owns the AddonsReady condition of TenantBundles.
const FieldOwner = "tenant-operator-addons"

// Reconciler reconciles the addon tier of TenantBundles.
type Reconciler struct {
	client.Client
	// APIReader reads what the cache may not hold yet.
	APIReader client.Reader
	Bundles   fs.FS
	// Apply applies Flux and the addon objects.
	Apply *apply.Engine
	// APIHost and APIPort are the API endpoint the operator itself uses,
	// given to Flux's hostNetwork containers.
	APIHost, APIPort string

	flux          fluxState
	addonsApplied memo
	// written is the AddonsReady this process last wrote, per
	// TenantBundle (see statuswrite).
	written statuswrite.Memo[*metav1.Condition]
}

// Reconcile applies Flux and the addon Packages and reports AddonsReady.
// A refused choice is reported as AddonsReady=False with the refusal's
// reason; the TenantBundle controller turns that into Stalled.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &tenantv1.TenantBundle{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() || obj.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	before := conditions.Get(obj, tenantv1.AddonsReadyCondition)
	err := r.ensureFlux(ctx)
	if err == nil {
		err = r.addons(ctx, obj)
	}
	if err != nil {
		reason, _ := outcome.Classify(err)
		if c := conditions.Get(obj, tenantv1.AddonsReadyCondition); c == nil || c.Status == metav1.ConditionTrue || !tenantv1.IsAddonRefusal(c.Reason) {
			conditions.MarkFalse(obj, tenantv1.AddonsReadyCondition, reason, "%v", err)
		}
	}
	after := conditions.Get(obj, tenantv1.AddonsReadyCondition)
	if after != nil && !r.written.Unchanged(req.NamespacedName, obj.UID, before, after) {
		stored, perr := r.writeCondition(ctx, obj, after)
		if perr == nil {
			r.written.Wrote(req.NamespacedName, obj.UID, stored)
		}
		err = outcome.AfterStatusWrite(err, perr)
	}
	if _, isTerminal := outcome.Classify(err); isTerminal {
		return ctrl.Result{}, nil // reported; a spec change brings the next attempt
	}
	return ctrl.Result{}, err
}

// writeCondition applies AddonsReady alone with server-side apply: the
// conditions list is a map keyed by type, so this manager owns exactly this
// entry and the TenantBundle controller's writes leave it alone. It returns
// the condition as stored.
func (r *Reconciler) writeCondition(ctx context.Context, obj *tenantv1.TenantBundle, c *metav1.Condition) (*metav1.Condition, error) {
	return apply.ApplyCondition(ctx, r.Client, obj, tenantv1.GroupVersion.WithKind("TenantBundle"), *c, FieldOwner)
}
