package tenantbundle

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cozystack/tenant-operator/internal/scheme"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// A status that goes Ready, not Ready (written), Ready again while the
// cache still holds the first Ready must be written: the server holds the
// second. Skipping it because it equals the object read would leave the
// TenantBundle not Ready until some other event.
func TestReportWritesOverAStaleRead(t *testing.T) {
	ctx := context.Background()
	tb := &tenantv1.TenantBundle{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Generation: 1, UID: "uid-1"}}
	conditions.MarkTrue(tb, tenantv1.NetworkReadyCondition, tenantv1.ReasonSucceeded, "network tier ready")
	summarize(tb, nil, "")
	tb.Status.ObservedGeneration = 1
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tb).WithStatusSubresource(tb).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	r := &Reconciler{Client: c, pace: &pacer{}}
	read := func() *tenantv1.TenantBundle {
		got := &tenantv1.TenantBundle{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(tb), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	report := func(read *tenantv1.TenantBundle, notReady string) {
		if _, err := r.report(ctx, read, read.DeepCopy(), notReady, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	stale := read()

	report(stale, "coredns: 0/2 ready")
	if patches != 1 || conditions.IsReady(read()) {
		t.Fatalf("after a component went back to not Ready: %d writes, Ready %v; want 1 write, not Ready", patches, conditions.IsReady(read()))
	}
	report(stale, "")
	if patches != 2 || !conditions.IsReady(read()) {
		t.Fatalf("Ready again, read from a cache that has not seen the last write: %d writes, Ready %v; want 2 writes, Ready", patches, conditions.IsReady(read()))
	}
	report(read(), "")
	if patches != 2 {
		t.Errorf("nothing new, read after the cache caught up: %d writes, want 2", patches)
	}
}
