package tenantbundle

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/tenant-operator/internal/readiness"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

const (
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// SetupWithManager registers the controller. Workloads are watched (the
// manager's cache holds only Helm-managed ones) so that a component's
// dependents start on the event that makes it Ready, and so that a deleted
// or edited workload is restored on the event, not on a timer.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&tenantv1.TenantBundle{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Named("tenantbundle")
	for _, obj := range readiness.WorkloadTypes() {
		b = b.Watches(obj, r.workloadHandler())
	}
	// Nodes decide the variant and show the cloud's effects (providerID,
	// the uninitialized taint); their status heartbeats are filtered out.
	b = b.Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allBundles),
		builder.WithPredicates(nodeChanged()))
	// Addon Packages: their Ready verdict feeds AddonsReady, and a change
	// by someone else makes the next reconcile apply them again.
	b = b.Watches(&cozyv1.Package{}, r.addonPackageHandler(), builder.WithPredicates(addonLabelled()))
	return b.Complete(r)
}

// allBundles maps any event to every TenantBundle (one per cluster).
func (r *Reconciler) allBundles(ctx context.Context, _ client.Object) []reconcile.Request {
	var list tenantv1.TenantBundleList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing TenantBundles")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, tb := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&tb)})
	}
	return out
}

// nodeChanged passes node events that can change the variant or the cloud
// effects: creation, deletion, labels, providerID, taints.
func nodeChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
			return o.Spec.ProviderID != n.Spec.ProviderID ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
		},
	}
}

// workloadHandler enqueues every TenantBundle (there is one per cluster) and
// marks the owning release for a drift check when the workload was deleted
// or its spec changed.
func (r *Reconciler) workloadHandler() handler.EventHandler {
	enqueueAll := func(ctx context.Context, q queue) {
		for _, req := range r.allBundles(ctx, nil) {
			q.Add(req)
		}
	}
	mark := func(obj client.Object) {
		ann := obj.GetAnnotations()
		if name := ann[releaseNameAnnotation]; name != "" {
			r.Engine.Drift.Mark(ann[releaseNamespaceAnnotation], name)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q queue) { enqueueAll(ctx, q) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				mark(e.ObjectNew)
			}
			if readiness.Changed(e.ObjectOld, e.ObjectNew) {
				enqueueAll(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			mark(e.Object)
			enqueueAll(ctx, q)
		},
	}
}

func addonLabelled() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[AddonLabel]
		return ok
	})
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
