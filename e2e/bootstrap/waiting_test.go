package bootstrap

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

var _ = Describe("A network tier that is not Ready yet", Ordered, func() {
	It("reports the addon and catalog tiers as waiting for it, then hands them to their controllers", func(ctx SpecContext) {
		// NetworkReady stays False after the operator's first status writes.
		t, gate := startHeldAtCoreDNS(ctx, "waiting")

		waiting := PointTo(MatchFields(IgnoreExtras, Fields{
			"Status": Equal(metav1.ConditionUnknown),
			"Reason": Equal(tenantv1.ReasonWaitingForNetwork),
		}))
		for _, typ := range []string{tenantv1.AddonsReadyCondition, tenantv1.CatalogReadyCondition} {
			Eventually(bundleCondition(ctx, t, typ)).WithContext(ctx).Should(waiting, typ)
		}
		Expect(bundleCondition(ctx, t, tenantv1.NetworkReadyCondition)(Default)).To(PointTo(MatchFields(IgnoreExtras, Fields{
			"Status": Equal(metav1.ConditionFalse),
		})))

		Expect(gate.Close(ctx)).To(Succeed())
		expectReady(ctx, t)
		// Each tier's own controller takes its condition over. This world
		// runs no Flux controllers, so the default addons' Packages do not
		// turn Ready: AddonsReady says so, with the addon controller's
		// reason. No catalog source is given: CatalogReady is True.
		Eventually(bundleCondition(ctx, t, tenantv1.AddonsReadyCondition)).WithContext(ctx).Should(PointTo(MatchFields(IgnoreExtras, Fields{
			"Status": Equal(metav1.ConditionFalse),
			"Reason": Equal(tenantv1.ReasonAddonsNotReady),
		})))
		Eventually(bundleCondition(ctx, t, tenantv1.CatalogReadyCondition)).WithContext(ctx).Should(PointTo(MatchFields(IgnoreExtras, Fields{
			"Status": Equal(metav1.ConditionTrue),
		})))
	})
})
