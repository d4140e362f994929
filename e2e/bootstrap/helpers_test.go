package bootstrap

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
)

var tenantNodes = []world.NodeSpec{{Name: "worker-1"}, {Name: "worker-2"}, {Name: "worker-3"}}

// startTenant starts a world, pushes the packages and runs the operator
// (with operatorArgs appended to its seeded arguments).
func startTenant(ctx context.Context, name string, operatorArgs ...string) (*framework.Tenant, string) {
	w, err := world.Start(ctx, world.Options{Name: name, Nodes: tenantNodes, CNIPodSelector: framework.CNISelector})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanupWorld(w)
	url, _, err := framework.PushPackages(ctx, w)
	Expect(err).NotTo(HaveOccurred())
	cfg := framework.SeedConfig(w)
	cfg.ExtraArgs = operatorArgs
	t, err := framework.StartTenant(ctx, w, operatorBin, cfg)
	Expect(err).NotTo(HaveOccurred())
	return t, url
}

// startHeldAtCoreDNS starts a tenant, applies its bundle and returns once
// an admission gate holds the creation of the CoreDNS Deployment: the
// network tier is then half installed for as long as the spec needs.
func startHeldAtCoreDNS(ctx context.Context, name string) (*framework.Tenant, *framework.AdmissionGate) {
	t, url := startTenant(ctx, name)
	gate, err := framework.StartAdmissionGate(ctx, t.Client, "kube-system", "coredns")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gate.Close)
	Expect(t.ApplyBundle(ctx, framework.Bundle(t.World, url))).To(Succeed())
	Eventually(gate.Held).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Receive())
	return t, gate
}

type revision = framework.Revision

// releaseHistory lists every revision of every release of the cluster.
func releaseHistory(ctx context.Context, c client.Client) []revision {
	hist, err := framework.ReleaseHistory(ctx, c)
	Expect(err).NotTo(HaveOccurred())
	return hist
}

func bundleCondition(ctx context.Context, t *framework.Tenant, typ string) func(Gomega) *metav1.Condition {
	return framework.Condition(ctx, t, typ)
}

func expectReady(ctx context.Context, t *framework.Tenant) { framework.ExpectReady(ctx, t) }

const metav1ConditionFalse = metav1.ConditionFalse

func jsonValues(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// requestReconcile asks for a reconcile the way Flux clients do and waits
// until the operator says it handled it.
func requestReconcile(ctx context.Context, t *framework.Tenant, token string) {
	framework.RequestReconcile(ctx, t, token)
}

// workloadUIDs identifies the installed workloads, to prove nothing was
// deleted or recreated.
func workloadUIDs(ctx context.Context, t *framework.Tenant) map[string]string {
	uids, err := framework.WorkloadUIDs(ctx, t.Client)
	Expect(err).NotTo(HaveOccurred())
	return uids
}
