package variants

import (
	"path/filepath"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

var _ = Describe("A cluster with nodes of two backends", func() {
	It("stalls with the nodes listed per backend and installs neither variant", func(ctx SpecContext) {
		w := startWorld(ctx, world.Options{Name: "mixed", CNIPodSelector: framework.CNISelector,
			Nodes: append(nodes("kubevirt", false, "kv-a", "kv-b"), nodes("openstack", false, "os-a")...)})
		url, _, err := framework.PushPackages(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		t := startTenant(ctx, w)
		b := framework.Bundle(w, url)
		b.Spec.Variant = "auto"
		Expect(t.ApplyBundle(ctx, b)).To(Succeed())

		Eventually(condition(ctx, t, tenantv1.StalledCondition)).WithContext(ctx).Should(And(
			ready(metav1.ConditionTrue), HaveField("Reason", Equal(tenantv1.ReasonMixedBackends)),
			HaveField("Message", And(ContainSubstring("kubevirt: kv-a, kv-b"), ContainSubstring("openstack: os-a")))))
		// The network tier still comes up; no component of either variant does.
		Eventually(condition(ctx, t, tenantv1.NetworkReadyCondition)).WithContext(ctx).Should(ready(metav1.ConditionTrue))
		Consistently(func() []string { return releases(ctx, t) }).WithContext(ctx).
			Should(ConsistOf("cozy-cilium/cilium", "kube-system/coredns", "cozy-vsnap-crd/vsnap-crd"))
	})
})

var _ = Describe("A backend added as a folder", func() {
	It("is detected and installed with no change to the operator", func(ctx SpecContext) {
		w := startWorld(ctx, world.Options{Name: "fake", CNIPodSelector: framework.CNISelector,
			Nodes: nodes("fake", false, "fake-1", "fake-2")})
		url, _, err := framework.PushPackages(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		mirror, err := framework.PushCharts(ctx, w, "fake-cloud-node")
		Expect(err).NotTo(HaveOccurred())
		dir, err := framework.TestdataDir("variants")
		Expect(err).NotTo(HaveOccurred())
		t := startTenant(ctx, w, "--variants-dir="+filepath.Clean(dir))
		b := framework.Bundle(w, url)
		b.Spec.Variant = "auto"
		b.Spec.ChartMirrors = map[string]tenantv1.ChartMirror{"oci://charts.fake-cloud.example": {URL: mirror, Insecure: true}}
		Expect(t.ApplyBundle(ctx, b)).To(Succeed())

		expectReady(ctx, t)
		Expect(releases(ctx, t)).To(ContainElement("kube-system/fake-cloud-node"))
		Eventually(condition(ctx, t, tenantv1.VariantResolvedCondition)).WithContext(ctx).Should(HaveField("Message", ContainSubstring("fake")))
		var pods corev1.PodList
		Expect(t.Client.List(ctx, &pods)).To(Succeed())
		n := 0
		for _, p := range pods.Items {
			if p.Labels["app"] == "fake-cloud-node" {
				n++
			}
		}
		Expect(n).To(Equal(2))
	})
})

var _ = Describe("A cluster whose nodes give no backend signal yet", func() {
	It("reports the variant as Unknown while the network tier comes up", func(ctx SpecContext) {
		w := startWorld(ctx, world.Options{Name: "nosignal", CNIPodSelector: framework.CNISelector,
			Nodes: []world.NodeSpec{{Name: "plain-1"}, {Name: "plain-2"}}})
		url, _, err := framework.PushPackages(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		t := startTenant(ctx, w)
		b := framework.Bundle(w, url)
		b.Spec.Variant = "auto"
		Expect(t.ApplyBundle(ctx, b)).To(Succeed())

		Eventually(condition(ctx, t, tenantv1.NetworkReadyCondition)).WithContext(ctx).Should(ready(metav1.ConditionTrue))
		Eventually(condition(ctx, t, tenantv1.VariantResolvedCondition)).WithContext(ctx).Should(And(
			ready(metav1.ConditionUnknown), HaveField("Reason", Equal(tenantv1.ReasonVariantUnknown)),
			HaveField("Message", ContainSubstring("node.cluster.x-k8s.io/backend"))))
		Eventually(condition(ctx, t, tenantv1.ReadyCondition)).WithContext(ctx).Should(And(
			ready(metav1.ConditionFalse), HaveField("Message", ContainSubstring("variant:"))))
		bundle, err := t.Bundle(ctx, "tenant")
		Expect(err).NotTo(HaveOccurred())
		Expect(bundle.Status.Variant).To(BeEmpty())
		Expect(conditions.IsStalled(bundle)).To(BeFalse(), "waiting for nodes is not stalled")

		By("a node group of a known backend joins")
		Expect(w.AddNode(ctx, world.NodeSpec{Name: "kv-late", Labels: map[string]string{"node.cluster.x-k8s.io/backend": "kubevirt"}})).To(Succeed())
		Eventually(condition(ctx, t, tenantv1.VariantResolvedCondition)).WithContext(ctx).Should(And(
			ready(metav1.ConditionTrue), HaveField("Message", ContainSubstring("kubevirt"))))
	})
})
