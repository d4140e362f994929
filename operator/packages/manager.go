package packages

import (
	"context"
	"fmt"
	"slices"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/fluxcd/pkg/runtime/predicates"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// SetupWithManager registers the controller. Every input is a watch, so a
// dependent Package starts on the event that makes its dependency Ready,
// not on a timer.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("package").
		WithOptions(controller.Options{RateLimiter: outcome.RateLimiter()}).
		For(&cozyv1.Package{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}))).
		Owns(&helmv2.HelmRelease{}, builder.WithPredicates(readyChanged())).
		// A dependency turning Ready (or not) wakes its dependents.
		Watches(&cozyv1.Package{}, handler.EnqueueRequestsFromMapFunc(r.dependents),
			builder.WithPredicates(readyChanged())).
		Watches(&cozyv1.PackageSource{}, handler.EnqueueRequestsFromMapFunc(sameName),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The catalog policy and the cluster values apply to every Package.
		Watches(&tenantv1.TenantBundle{}, handler.EnqueueRequestsFromMapFunc(r.all),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A new packages artifact rebuilds every chart.
		Watches(&sourcev1.OCIRepository{}, handler.EnqueueRequestsFromMapFunc(r.all),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The cluster values are part of what was classified: an edit
		// (or a deletion) is put back (see ValuesSecretSelector).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace)).
		Complete(r)
}

// ValuesSecretSelector selects the only Secrets the operator watches, the
// cozystack-values of each namespace; the manager's cache must be given it.
func ValuesSecretSelector() fields.Selector {
	return fields.OneTermEqualSelector("metadata.name", ValuesSecret)
}

// inNamespace maps an object to the Packages with a HelmRelease in its
// namespace.
func (r *Reconciler) inNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var list helmv2.HelmReleaseList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.HasLabels{PackageLabel}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, hr := range list.Items {
		req := reconcile.Request{NamespacedName: client.ObjectKey{Name: hr.Labels[PackageLabel]}}
		if !slices.Contains(out, req) {
			out = append(out, req)
		}
	}
	return out
}

func sameName(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: obj.GetName()}}}
}

// dependents maps a Package to the Packages that record it as a
// dependency.
func (r *Reconciler) dependents(ctx context.Context, obj client.Object) []reconcile.Request {
	var list cozyv1.PackageList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if _, ok := p.Status.Dependencies[obj.GetName()]; ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: p.Name}})
		}
	}
	return out
}

func (r *Reconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list cozyv1.PackageList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: p.Name}})
	}
	return out
}

// readyChanged passes creations, deletions, spec changes and changes of the
// Ready or Stalled verdict; the status churn in between wakes nobody.
func readyChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				return true
			}
			return verdict(e.ObjectOld) != verdict(e.ObjectNew)
		},
	}
}

// verdict is what a dependent cares about: the Ready and Stalled verdicts
// and whether they speak of the current generation.
func verdict(obj client.Object) string {
	var conds []metav1.Condition
	var observed int64
	switch o := obj.(type) {
	case *helmv2.HelmRelease:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	case *cozyv1.Package:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	}
	out := fmt.Sprint(observed == obj.GetGeneration())
	for _, t := range []string{meta.ReadyCondition, meta.StalledCondition} {
		if c := apimeta.FindStatusCondition(conds, t); c != nil {
			out += ";" + t + "=" + string(c.Status) + "/" + c.Reason
		}
	}
	return out
}
