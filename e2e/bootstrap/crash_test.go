package bootstrap

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

var _ = Describe("The operator killed -9 in the middle of the CoreDNS install", Ordered, func() {
	It("converges after a restart: the stale lock marked failed, installed over, nothing left pending", func(ctx SpecContext) {
		// The kill lands while Helm's pending-install revision is written
		// and the install is half done, every time.
		t, gate := startHeldAtCoreDNS(ctx, "crash")
		Expect(releaseHistory(ctx, t.Client)).To(ContainElement(revision{Release: "kube-system/coredns", Version: 1, Status: "pending-install"}))

		proc := t.Operator.Procs[0]
		Expect(proc.Kill()).To(Succeed())
		code, exited := proc.ExitCode()
		Expect(exited).To(BeTrue())
		Expect(code).To(Equal(128 + 9))
		// The stale lock survives the writer: nothing else would clear it.
		Expect(releaseHistory(ctx, t.Client)).To(ContainElement(revision{Release: "kube-system/coredns", Version: 1, Status: "pending-install"}))

		Expect(gate.Close(context.Background())).To(Succeed())
		Expect(proc.Restart(ctx)).To(Succeed())
		expectReady(ctx, t)

		// The interrupted install stays in the history, as helm-controller
		// keeps it: marked failed, then followed by the install that
		// finished. Nothing is left pending, and every release's latest
		// revision is deployed.
		hist := releaseHistory(ctx, t.Client)
		Expect(hist).To(ContainElements(
			revision{Release: "kube-system/coredns", Version: 1, Status: "failed"},
			revision{Release: "kube-system/coredns", Version: 2, Status: "deployed"}))
		Expect(framework.Unsettled(hist)).To(BeEmpty())
	})
})
