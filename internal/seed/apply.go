package seed

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
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

// BundleName is the name of the one TenantBundle of a tenant.
const BundleName = "tenant"

// Apply puts the seed into a tenant: the operator's CRDs (created when
// absent, never patched), namespace, RBAC and the operator Deployment with
// server-side apply as SeedManager (definitions first, established before
// the rest), then the TenantBundle with ApplyBundle's precedence. Idempotent:
// a re-run writes nothing unless something changed; a new Version rolls the
// operator, which re-applies its CRDs at start and adopts what runs (no
// reinstall).
func Apply(ctx context.Context, c client.Client, cfg Config) error {
	if err := ApplyOperator(ctx, c, cfg); err != nil {
		return err
	}
	if cfg.Bundle == nil {
		return nil
	}
	// The CRD is established, but a client that looked the group up before
	// it existed still answers "no match" until its RESTMapper looks again.
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cfg.crdWait(), true, func(ctx context.Context) (bool, error) {
		last = ApplyBundle(ctx, c, cfg.Bundle)
		return !meta.IsNoMatchError(last), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to serve the TenantBundle kind: %w (last: %v)", err, last)
	}
	return last
}

// ApplyOperator applies the CRDs, namespace, RBAC and Deployment of the seed
// (not the TenantBundle) as SeedManager, the CRDs and namespace first.
func ApplyOperator(ctx context.Context, c client.Client, cfg Config) error {
	cfg.Bundle = nil
	objs, err := Objects(cfg)
	if err != nil {
		return err
	}
	us := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, err := apply.ToUnstructured(o)
		if err != nil {
			return err
		}
		us = append(us, u)
	}
	_, err = apply.NewFor(c, SeedManager).ApplyStaged(ctx, us, time.Minute)
	return err
}
