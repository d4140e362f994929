package seeder

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	seederv1 "github.com/cozystack/tenant-operator/operator/apis/seeder/v1alpha1"
)

const defaultTenantTimeout = 10 * time.Second

// SetupWithManager registers the controller. TenantControlPlanes and admin
// kubeconfig Secrets (metadata only: their content is read when needed,
// never cached) map to the TenantSeed of the same tenant.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	tcp := &unstructured.Unstructured{}
	tcp.SetGroupVersionKind(TenantControlPlaneGVK)
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantseed").
		For(&seederv1.TenantSeed{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(tcp, handler.EnqueueRequestsFromMapFunc(r.seedsOf(func(o client.Object) string { return o.GetName() }))).
		WatchesMetadata(secret, handler.EnqueueRequestsFromMapFunc(r.seedsOf(func(o client.Object) string {
			return strings.TrimSuffix(o.GetName(), "-admin-kubeconfig")
		})), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return strings.HasSuffix(o.GetName(), "-admin-kubeconfig")
		}))).
		Complete(r)
}

// seedsOf maps an object to the TenantSeeds of its namespace whose control
// plane is named tcpName(obj).
func (r *Reconciler) seedsOf(tcpName func(client.Object) string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list seederv1.TenantSeedList
		if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		name := tcpName(obj)
		var out []reconcile.Request
		for _, ts := range list.Items {
			ref := ts.Spec.TenantControlPlane
			if ref == "" {
				ref = ts.Name
			}
			if ref == name {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ts)})
			}
		}
		return out
	}
}
