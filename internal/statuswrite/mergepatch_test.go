package statuswrite

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/scheme"
	"github.com/cozystack/tenant-operator/internal/statuswrite/statuswritetest"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// The merge patch over a stale read must be taken from what the server
// holds: from the stale read, Ready again is no change at all. A Package
// stands for any object whose status one controller writes.
func TestMergePatchOverAStaleRead(t *testing.T) {
	ctx := context.Background()
	pkg := &cozyv1.Package{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager", Generation: 1, UID: "uid-1"}}
	conditions.MarkTrue(pkg, "Ready", "Succeeded", "ready")
	c, writes := statuswritetest.Client(scheme.New(), pkg)
	var m Memo[cozyv1.PackageStatus]
	status := func(o client.Object) *cozyv1.PackageStatus { return &o.(*cozyv1.Package).Status }
	get := statuswritetest.Reader(t, c, pkg)
	statuswritetest.StaleRead(t, get, func(read *cozyv1.Package, ready bool) {
		want := read.DeepCopy()
		if ready {
			conditions.MarkTrue(want, "Ready", "Succeeded", "ready")
		} else {
			conditions.MarkFalse(want, "Ready", "Progressing", "1 of 2 HelmReleases Ready")
		}
		if err := m.MergePatch(ctx, c, read, want, status); err != nil {
			t.Fatal(err)
		}
	}, writes)
}
