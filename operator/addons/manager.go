package addons

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/tenant-operator/internal/flux"
	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// SetupWithManager registers the controller: the TenantBundle (its spec,
// and the status facts the addon tier depends on: the network tier and the
// packages artifact), the addon Packages and the Flux Deployment.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("addons").
		WithOptions(controller.Options{RateLimiter: outcome.RateLimiter()}).
		For(&tenantv1.TenantBundle{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, inputsChanged()))).
		Watches(&cozyv1.Package{}, r.addonPackageHandler(), builder.WithPredicates(addonLabelled())).
		// What the addon tier applies besides Packages, put back when it is
		// edited or deleted behind the operator's back.
		Watches(&cozyv1.PackageSource{}, r.forgetOnChange(), builder.WithPredicates(addonLabelled())).
		Watches(&sourcev1.OCIRepository{}, r.forgetOnChange(), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == PackagesRepository
		}))).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.allBundles),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetNamespace() == flux.Namespace && o.GetName() == flux.Deployment
			}))).
		Complete(r)
}

// inputsChanged passes status changes the addon tier reads: NetworkReady
// (addons held for the network) and the artifact digest.
func inputsChanged() predicate.Predicate {
	key := func(o client.Object) string {
		tb := o.(*tenantv1.TenantBundle)
		return tb.Status.ArtifactDigest + "/" + fmt.Sprint(conditions.IsTrue(tb, tenantv1.NetworkReadyCondition))
	}
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return key(e.ObjectOld) != key(e.ObjectNew) }}
}

func (r *Reconciler) allBundles(ctx context.Context, o client.Object) []reconcile.Request {
	return AllBundles(r.Client)(ctx, o)
}

// AllBundles maps any event to every TenantBundle (one per cluster).
func AllBundles(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		return allBundles(ctx, c)
	}
}

func allBundles(ctx context.Context, c client.Reader) []reconcile.Request {
	var list tenantv1.TenantBundleList
	if err := c.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing TenantBundles")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, tb := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&tb)})
	}
	return out
}

func addonLabelled() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[AddonLabel]
		return ok
	})
}

// forgetOnChange forgets what was applied, and enqueues the TenantBundle,
// when an object the addon tier applied was changed (a new generation) or
// deleted: the memo of applyAddons would hide it otherwise.
func (r *Reconciler) forgetOnChange() handler.EventHandler {
	forget := func(ctx context.Context, q queue) {
		r.addonsApplied.Store("")
		for _, req := range r.allBundles(ctx, nil) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				forget(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q queue) { forget(ctx, q) },
	}
}

// addonPackageHandler enqueues the TenantBundle when an addon Package's
// verdict changes, and forgets what was applied when a Package was changed
// or deleted behind the operator's back.
func (r *Reconciler) addonPackageHandler() handler.EventHandler {
	enqueueAll := func(ctx context.Context, q queue) {
		for _, req := range r.allBundles(ctx, nil) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q queue) { enqueueAll(ctx, q) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				r.addonsApplied.Store("")
				enqueueAll(ctx, q)
				return
			}
			if !equality.Semantic.DeepEqual(e.ObjectOld.(*cozyv1.Package).Status, e.ObjectNew.(*cozyv1.Package).Status) {
				enqueueAll(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q queue) {
			r.addonsApplied.Store("")
			enqueueAll(ctx, q)
		},
	}
}
