package bootstrap

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

var _ = Describe("An operator that has gone quiet", Ordered, func() {
	It("gives the kernel back the executable pages its start-up and bootstrap touched", func(ctx SpecContext) {
		// Long enough that Ready is observed well before the release.
		const quiet = 5 * time.Second
		t, url := startTenant(ctx, "idle", "--release-idle-memory-after="+quiet.String())
		Expect(t.ApplyBundle(ctx, framework.Bundle(t.World, url))).To(Succeed())
		expectReady(ctx, t)
		pid := t.Operator.Procs[0].PID()
		busy, err := framework.ReadMemory(pid)
		Expect(err).NotTo(HaveOccurred())

		// Ratios, not sizes: what an idle operator runs again is faulted
		// back in, but far less than start-up and a bootstrap touched.
		Eventually(func(g Gomega) float64 {
			m, err := framework.ReadMemory(pid)
			g.Expect(err).NotTo(HaveOccurred())
			return m.File
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeNumerically("<", busy.File/2),
			"executable pages resident at Ready: %.1f MiB", busy.File)
		Expect(t.Operator.Procs[0].PID()).To(Equal(pid), "the operator restarted")
	})
})
