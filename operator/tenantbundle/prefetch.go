package tenantbundle

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/source"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// Prefetch downloads the packages artifact of every TenantBundle that
// exists when the process starts. The seed applies the TenantBundle before
// the operator runs, so its artifact can be on disk by the time the
// manager has checked the CRDs, synced its caches and taken the Lease,
// instead of being fetched and extracted after all of that, on the
// bootstrap's critical path. It only reads (one list, then the registry),
// so it does not wait for the Lease; anything it cannot do is left to the
// reconcile, which reports it.
func Prefetch(ctx context.Context, c client.Reader, p *source.Puller) {
	log := ctrl.Log.WithName("prefetch")
	var list tenantv1.TenantBundleList
	if err := c.List(ctx, &list); err != nil {
		// A cluster the operator starts on first has no TenantBundle CRD yet.
		log.V(1).Info("nothing to prefetch", "reason", err.Error())
		return
	}
	// The reconciler's own pull (credentials, digest checks). The Puller
	// shares a download in flight, so a reconcile that asks for the same
	// digest meanwhile waits for this one instead of starting another.
	r := &Reconciler{APIReader: c, Puller: p}
	for i := range list.Items {
		b := &list.Items[i]
		if b.Spec.Suspend || !b.DeletionTimestamp.IsZero() {
			continue
		}
		start := time.Now()
		art, err := r.pull(ctx, b)
		if err != nil {
			log.V(1).Info("prefetch failed; the reconcile pulls again", "tenantbundle", b.Name, "error", err.Error())
			continue
		}
		log.V(1).Info("prefetched", "tenantbundle", b.Name, "digest", art.Digest, "took", time.Since(start).String())
	}
}
