package tenantbundle

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/tenant-operator/internal/scheme"
	"github.com/cozystack/tenant-operator/internal/statuswrite/statuswritetest"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// The TenantBundle turns not Ready (written), then Ready again before the
// cache has seen that write: the report must write Ready although it equals
// the object read, or the server keeps not Ready until some other event.
func TestReportWritesOverAStaleRead(t *testing.T) {
	ctx := context.Background()
	tb := &tenantv1.TenantBundle{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Generation: 1, UID: "uid-1"}}
	conditions.MarkTrue(tb, tenantv1.NetworkReadyCondition, tenantv1.ReasonSucceeded, "network tier ready")
	summarize(tb, nil, "")
	tb.Status.ObservedGeneration = 1
	c, patches := statuswritetest.Client(scheme.New(), tb)
	r := &Reconciler{Client: c, pace: &pacer{}}
	read := statuswritetest.Reader(t, c, tb)
	statuswritetest.StaleRead(t, read, func(read *tenantv1.TenantBundle, ready bool) {
		notReady := ""
		if !ready {
			notReady = "coredns: 0/2 ready"
		}
		if _, err := r.report(ctx, read, read.DeepCopy(), notReady, nil, 0); err != nil {
			t.Fatal(err)
		}
	}, patches)
}
