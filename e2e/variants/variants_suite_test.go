// Package variants is the e2e suite of the cloud tier: the variant follows
// the nodes (KubeVirt, OpenStack, a test-only backend loaded from a folder),
// mixed or contradicting clusters stall without installing a variant, and
// credentials never leak.
package variants

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/bundle"
)

var (
	operatorBin string
	failed      bool
)

func TestVariants(t *testing.T) {
	RegisterFailHandler(Fail)
	framework.SetSuiteDefaults()
	RunSpecs(t, "Variants suite")
}

var _ = BeforeSuite(func() {
	var err error
	operatorBin, err = framework.BuildOperator(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
})

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		failed = true
	}
})

// nodes returns fake workers of one backend.
func nodes(backend string, uninitialized bool, names ...string) []world.NodeSpec {
	var out []world.NodeSpec
	for _, n := range names {
		out = append(out, world.NodeSpec{Name: n, Uninitialized: uninitialized,
			Labels: map[string]string{bundle.BackendLabel: backend}})
	}
	return out
}

// startWorld starts a world stopped when the container ends.
func startWorld(ctx context.Context, opts world.Options) *world.World {
	w, err := world.Start(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(w.Stop(failed)).To(Succeed()) })
	return w
}

// startTenant seeds w and runs the operator with extra arguments.
func startTenant(ctx context.Context, w *world.World, extraArgs ...string) *framework.Tenant {
	cfg := framework.SeedConfig(w)
	cfg.ExtraArgs = extraArgs
	t, err := framework.StartTenant(ctx, w, operatorBin, cfg)
	Expect(err).NotTo(HaveOccurred())
	return t
}

func condition(ctx context.Context, t *framework.Tenant, typ string) func(Gomega) *metav1.Condition {
	return framework.Condition(ctx, t, typ)
}

func expectReady(ctx context.Context, t *framework.Tenant) { framework.ExpectReady(ctx, t) }

func releases(ctx context.Context, t *framework.Tenant) []string {
	r, err := framework.Releases(ctx, t.Client)
	Expect(err).NotTo(HaveOccurred())
	return r
}

func ready(s metav1.ConditionStatus) OmegaMatcher { return HaveField("Status", Equal(s)) }

// background is a context for watchers that must outlive the node that
// starts them (a BeforeAll's context ends with it); it ends with the
// container.
func background() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	return ctx
}
