package framework

import (
	"context"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// RequestReconcile asks the operator to reconcile the TenantBundle "tenant"
// (Flux's requestedAt annotation) and waits until it says it has: proof that
// the operator running now has looked, not one that ran before.
func RequestReconcile(ctx context.Context, t *Tenant, token string) {
	b, err := t.Bundle(ctx, "tenant")
	Expect(err).NotTo(HaveOccurred())
	patch := client.MergeFrom(b.DeepCopy())
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[meta.ReconcileRequestAnnotation] = token
	Expect(t.Client.Patch(ctx, b, patch)).To(Succeed())
	Eventually(func(g Gomega) string {
		b, err := t.Bundle(ctx, "tenant")
		g.Expect(err).NotTo(HaveOccurred())
		return b.Status.LastHandledReconcileAt
	}).WithContext(ctx).Should(Equal(token))
}

// ExpectReady waits for the TenantBundle "tenant" to be Ready at its latest
// generation.
func ExpectReady(ctx context.Context, t *Tenant) {
	Eventually(func(g Gomega) {
		b, err := t.Bundle(ctx, "tenant")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))
		g.Expect(conditions.IsReady(b)).To(BeTrue(), "Ready: %v", conditions.Get(b, tenantv1.ReadyCondition))
	}).WithContext(ctx).Should(Succeed())
}

// Condition reads one condition of the TenantBundle "tenant", failing the
// attempt while it is missing or of an older generation; for Eventually.
func Condition(ctx context.Context, t *Tenant, typ string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		b, err := t.Bundle(ctx, "tenant")
		g.Expect(err).NotTo(HaveOccurred())
		c := conditions.Get(b, typ)
		g.Expect(c).NotTo(BeNil(), "condition %s not set yet", typ)
		g.Expect(c.ObservedGeneration).To(Equal(b.Generation), "condition %s is of an older generation", typ)
		return c
	}
}

// EventReasons lists "reason: note" of the Events recorded about the
// object of kind and name, in every namespace (those of cluster-scoped
// objects go to default).
func EventReasons(ctx context.Context, c client.Client, kind, name string) ([]string, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out, nil
}
