package bootstrap

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cozystack/tenant-operator/e2e/world"
)

// DeferCleanupWorld stops w when the current container ends, keeping its
// logs when anything failed.
func DeferCleanupWorld(w *world.World) {
	DeferCleanup(func() {
		Expect(w.Stop(failed || CurrentSpecReport().Failed())).To(Succeed())
	})
}
