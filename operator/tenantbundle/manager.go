package tenantbundle

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/readiness"
	"github.com/cozystack/tenant-operator/internal/watch"
	"github.com/cozystack/tenant-operator/operator/addons"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

const (
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// SetupWithManager registers the controller. Workloads are watched (the
// manager's cache holds only Helm-managed ones) so that a component's
// dependents start on the event that makes it Ready, and so that a deleted
// or edited workload is restored on the event, not on a timer. Its sources
// are the channel-synced ones of internal/watch and start before the lease
// is won (warmup): both keep cache syncing off the bootstrap's critical path.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	c := mgr.GetCache()
	r.informers = c
	r.pace = &pacer{every: r.ProgressInterval}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("tenantbundle").
		WatchesRawSource(watch.Objects(c, &tenantv1.TenantBundle{}, &handler.EnqueueRequestForObject{},
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, addonsRefusalChanged()))).
		WithOptions(controller.Options{RateLimiter: outcome.RateLimiter(), EnableWarmup: ptr.To(true)})
	for _, obj := range readiness.WorkloadTypes() {
		b = b.WatchesRawSource(watch.Objects(c, obj, r.workloadHandler()))
	}
	// Nodes decide the variant and show the cloud's effects (providerID,
	// the uninitialized taint); their status heartbeats are filtered out.
	b = b.WatchesRawSource(watch.Objects(c, &corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allBundles), nodeChanged()))
	return b.Complete(r)
}

// allBundles maps any event to every TenantBundle (one per cluster). Until
// the TenantBundle informer has synced it maps to nothing: the cache read
// would block the calling informer's event delivery meanwhile (the cache
// polls for the sync every 100 ms), which held the Node source, and with it
// the workers, for 0.1 s at start in half of the bootstraps measured. Nothing
// is lost: every TenantBundle's own initial event enqueues it, for a
// reconcile that reads the nodes and workloads as they are by then.
func (r *Reconciler) allBundles(ctx context.Context, o client.Object) []reconcile.Request {
	inf, err := r.informers.GetInformer(ctx, &tenantv1.TenantBundle{}, cache.BlockUntilSynced(false))
	if err == nil && !inf.HasSynced() {
		return nil
	}
	return addons.AllBundles(r.Client)(ctx, o)
}

// nodeChanged passes node events that can change the variant or the cloud
// effects: creation, deletion, labels, providerID, the uninitialized taint.
// Other taints are not looked at: the not-ready ones come and go on every
// node as the CNI rolls out, and each woke a reconcile beside that rollout.
func nodeChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
			return o.Spec.ProviderID != n.Spec.ProviderID ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				uninitialized(o) != uninitialized(n)
		},
	}
}

// progressEvery is how often, at most, a rollout's counters alone wake the
// reconciler to refresh the progress it reports. A DaemonSet's status is
// written once per pod or so, and reconciling on each of those writes gave
// the API server and the operator work beside the rollout on the
// bootstrap's critical path (more so the more nodes) without changing what
// the operator decides.
const progressEvery = time.Second

// workloadHandler enqueues every TenantBundle (there is one per cluster) and
// marks the owning release for a drift check when the workload was deleted
// or its spec changed. An update that only moves a rollout's progress is
// enqueued after progressEvery, which folds the updates of that second into
// one reconcile; one that can change a decision is enqueued at once.
func (r *Reconciler) workloadHandler() handler.EventHandler {
	enqueueAll := func(ctx context.Context, q queue, after time.Duration) {
		reqs := r.allBundles(ctx, nil)
		for _, req := range reqs {
			q.AddAfter(req, after)
		}
		if len(reqs) > 0 {
			r.workloadEvents.Add(1)
		}
	}
	mark := func(obj client.Object) {
		ann := obj.GetAnnotations()
		if name := ann[releaseNameAnnotation]; name != "" {
			r.Engine.Drift.Mark(ann[releaseNamespaceAnnotation], name)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q queue) { enqueueAll(ctx, q, 0) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				mark(e.ObjectNew)
			}
			switch readiness.Changed(e.ObjectOld, e.ObjectNew) {
			case readiness.Verdict:
				enqueueAll(ctx, q, 0)
			case readiness.Progress:
				enqueueAll(ctx, q, progressEvery)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			mark(e.Object)
			enqueueAll(ctx, q, 0)
		},
	}
}

// addonsRefusalChanged passes a TenantBundle whose AddonsReady condition
// turned into, or out of, a refusal: Stalled is decided here.
func addonsRefusalChanged() predicate.Predicate {
	refusal := func(o client.Object) string {
		c := conditions.Get(o.(*tenantv1.TenantBundle), tenantv1.AddonsReadyCondition)
		if c == nil || !tenantv1.IsAddonRefusal(c.Reason) {
			return ""
		}
		return c.Reason + c.Message
	}
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool { return refusal(e.ObjectOld) != refusal(e.ObjectNew) },
	}
}
