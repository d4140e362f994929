package bootstrap

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The operator killed -9 in the middle of the CoreDNS install", Ordered, func() {
	It("converges after a restart with no failed or pending revision left", func(ctx SpecContext) {
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

		for _, r := range releaseHistory(ctx, t.Client) {
			Expect(r.Status).To(Equal("deployed"), "revision %v", r)
		}
		Expect(releaseHistory(ctx, t.Client)).To(ContainElement(revision{Release: "kube-system/coredns", Version: 1, Status: "deployed"}))
	})
})
