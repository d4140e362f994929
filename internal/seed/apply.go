package seed

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/apply"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// ApplyBundle applies the management side's TenantBundle as SeedManager,
// leaving a tenant admin's addon choices alone unless the management side
// changed its own (see Precedence).
func ApplyBundle(ctx context.Context, c client.Client, want *tenantv1.TenantBundle) error {
	cur := &tenantv1.TenantBundle{}
	switch err := c.Get(ctx, client.ObjectKeyFromObject(want), cur); {
	case apierrors.IsNotFound(err):
		cur = nil
	case err != nil:
		return err
	}
	b := want.DeepCopy()
	addons, record, err := Precedence(want.Spec.Addons, cur)
	if err != nil {
		return err
	}
	b.Spec.Addons = addons
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[SeededAddonsAnnotation] = record
	b.TypeMeta.APIVersion, b.TypeMeta.Kind = tenantv1.GroupVersion.String(), "TenantBundle"
	b.ResourceVersion, b.ManagedFields, b.Status = "", nil, tenantv1.TenantBundleStatus{}
	if _, err := apply.NewFor(c, SeedManager).ApplyObjects(ctx, b); err != nil {
		return fmt.Errorf("TenantBundle %s: %w", b.Name, err)
	}
	return nil
}
