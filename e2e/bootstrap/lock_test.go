package bootstrap

import (
	"context"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/cozystack/tenant-operator/e2e/framework"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

var _ = Describe("A release locked by somebody else", Ordered, func() {
	It("is left to its writer, and taken over once that writer is done", func(ctx SpecContext) {
		t, url := startTenant(ctx, "foreign-lock")
		Expect(t.ApplyBundle(ctx, framework.Bundle(t.World, url))).To(Succeed())
		expectReady(ctx, t)
		Eventually(func(g Gomega) []string {
			reasons, err := framework.EventReasons(ctx, t.Client, "TenantBundle", "tenant")
			g.Expect(err).NotTo(HaveOccurred())
			return reasons
		}).WithContext(ctx).Should(ContainElements(
			HavePrefix("Installed: component cilium: installed"),
			HavePrefix("Installed: component coredns: installed")), "kubectl describe shows what the operator did")

		By("somebody running helm upgrade on CoreDNS: its pending revision carries no digest of ours")
		store := storage.Init(driver.NewSecrets(t.World.Clientset.CoreV1().Secrets("kube-system")))
		current, err := store.Deployed("coredns")
		Expect(err).NotTo(HaveOccurred())
		foreign := *current
		info := *current.Info
		foreign.Info, foreign.Labels = &info, nil
		foreign.Version = current.Version + 1
		foreign.SetStatus(release.StatusPendingUpgrade, "Preparing upgrade")
		Expect(store.Create(&foreign)).To(Succeed())

		requestReconcile(ctx, t, "foreign-lock-1")
		Eventually(func(g Gomega) string {
			return bundleCondition(ctx, t, tenantv1.ReadyCondition)(g).Message
		}).WithContext(ctx).Should(ContainSubstring("locked by another writer"))
		Expect(releaseHistory(ctx, t.Client)).To(ContainElement(
			revision{Release: "kube-system/coredns", Version: foreign.Version, Status: "pending-upgrade"}), "left as its writer left it")

		By("that upgrade fails and its writer says so: the operator upgrades over it")
		foreign.SetStatus(release.StatusFailed, "Upgrade failed")
		Expect(store.Update(&foreign)).To(Succeed())
		requestReconcile(ctx, t, "foreign-lock-2")
		expectReady(ctx, t)
		Expect(releaseHistory(ctx, t.Client)).To(ContainElements(
			revision{Release: "kube-system/coredns", Version: foreign.Version, Status: "failed"},
			revision{Release: "kube-system/coredns", Version: foreign.Version + 1, Status: "deployed"}))
		b, err := t.Bundle(context.Background(), "tenant")
		Expect(err).NotTo(HaveOccurred())
		Expect(conditions.IsReady(b)).To(BeTrue())
		Eventually(func(g Gomega) []string {
			reasons, err := framework.EventReasons(ctx, t.Client, "TenantBundle", "tenant")
			g.Expect(err).NotTo(HaveOccurred())
			return reasons
		}).WithContext(ctx).Should(ContainElement(HavePrefix("Upgraded: component coredns: upgraded")))
	})
})
