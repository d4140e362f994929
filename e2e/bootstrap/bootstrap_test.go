package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/apply"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

var _ = Describe("Bootstrap of a fresh tenant cluster", Ordered, func() {
	var (
		t        *framework.Tenant
		timeline *framework.Timeline
		bundle   *tenantv1.TenantBundle
	)

	BeforeAll(func(ctx SpecContext) {
		var url string
		t, url = startTenant(ctx, "bootstrap")
		var err error
		// The timeline outlives this node's context: it records for the
		// whole container.
		recCtx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		timeline, err = framework.RecordTimeline(recCtx, t.World.Config)
		Expect(err).NotTo(HaveOccurred())
		bundle = framework.Bundle(t.World, url)
		Expect(t.ApplyBundle(ctx, bundle)).To(Succeed())
	})

	It("becomes Ready through the network tier, and kubectl wait sees it", func(ctx SpecContext) {
		bin, err := world.BinDir()
		Expect(err).NotTo(HaveOccurred())
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "kubectl"), "--kubeconfig", t.World.Kubeconfig,
			"wait", "--for=condition=Ready", "tenantbundle/tenant", "--timeout=120s").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		b, err := t.Bundle(ctx, "tenant")
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))
		Expect(conditions.IsTrue(b, tenantv1.NetworkReadyCondition)).To(BeTrue())
		Expect(conditions.IsTrue(b, tenantv1.SourceReadyCondition)).To(BeTrue())
		Expect(conditions.Has(b, tenantv1.StalledCondition)).To(BeFalse())
		Expect(conditions.Has(b, tenantv1.ReconcilingCondition)).To(BeFalse())
		Expect(b.Status.ArtifactDigest).To(HavePrefix("sha256:"))
		tiers := map[string]string{}
		for _, c := range b.Status.Components {
			tiers[c.Name] = c.Tier
			Expect(c.Ready).To(BeTrue(), "component %s: %s", c.Name, c.Message)
			Expect(c.Revision).To(Equal(1))
		}
		// Cozystack's Cilium replaces kube-proxy, so there is no kube-proxy;
		// the snapshot CRDs are always installed, for the CSI drivers.
		Expect(tiers).To(Equal(map[string]string{"cilium": "network", "coredns": "network", "vsnap-crd": "cloud"}))

		By("the values reaching Cozystack's real charts: the Cilium agent's API endpoint, kube-proxy replacement, routing mode and MTU")
		var ds appsv1.DaemonSet
		Expect(t.Client.Get(ctx, types.NamespacedName{Namespace: "cozy-cilium", Name: "cilium"}, &ds)).To(Succeed())
		env := map[string]string{}
		for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		Expect(env).To(HaveKeyWithValue("KUBERNETES_SERVICE_HOST", t.World.APIHost))
		Expect(env).To(HaveKeyWithValue("KUBERNETES_SERVICE_PORT", fmt.Sprint(t.World.APIPort)))
		var ciliumConfig corev1.ConfigMap
		Expect(t.Client.Get(ctx, types.NamespacedName{Namespace: "cozy-cilium", Name: "cilium-config"}, &ciliumConfig)).To(Succeed())
		Expect(ciliumConfig.Data).To(And(
			HaveKeyWithValue("kube-proxy-replacement", "true"),
			HaveKeyWithValue("routing-mode", "tunnel"),
			HaveKeyWithValue("mtu", "1350"),
			HaveKeyWithValue("enable-ipv4-masquerade", "true"),
		))
		By("the kube-dns Service on the DNS IP derived from the service CIDR")
		var svc corev1.Service
		Expect(t.Client.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: "kube-dns"}, &svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).To(Equal("10.95.0.10"))
		var nodes corev1.NodeList
		Expect(t.Client.List(ctx, &nodes)).To(Succeed())
		for _, n := range nodes.Items {
			Expect(nodeIsReady(&n)).To(BeTrue(), "node %s", n.Name)
		}
	})

	It("installs CoreDNS only after the CNI is Ready, and nodes turn Ready only through the CNI", func() {
		ciliumReady, ok := timeline.First(func(e framework.Event) bool {
			return e.Kind == "DaemonSet" && e.Namespace == "cozy-cilium" && e.Name == "cilium"
		})
		Expect(ok).To(BeTrue(), "the Cilium DaemonSet never turned Ready: %v", timeline.Events())
		corednsRelease, ok := timeline.First(func(e framework.Event) bool {
			return e.Kind == "Release" && strings.HasPrefix(e.Name, "coredns ")
		})
		Expect(ok).To(BeTrue())
		Expect(corednsRelease.RV).To(BeNumerically(">", ciliumReady.RV),
			"CoreDNS release (%s) written before the CNI was Ready (%s)", corednsRelease, ciliumReady)

		for _, n := range tenantNodes {
			nodeReady, ok := timeline.First(func(e framework.Event) bool { return e.Kind == "Node" && e.Name == n.Name })
			Expect(ok).To(BeTrue(), "node %s never Ready", n.Name)
			cniPod, ok := timeline.First(func(e framework.Event) bool {
				return e.Kind == "Pod" && e.Node == n.Name && e.Labels["k8s-app"] == "cilium"
			})
			Expect(ok).To(BeTrue(), "no Ready CNI pod on %s", n.Name)
			Expect(nodeReady.RV).To(BeNumerically(">", cniPod.RV), "node %s Ready before its CNI pod; timeline:\n%s", n.Name, timeline)
			for _, e := range timeline.Events() {
				if e.Kind == "Pod" && e.Node == n.Name && e.Labels["k8s-app"] == "kube-dns" {
					Expect(e.RV).To(BeNumerically(">", nodeReady.RV), "CoreDNS pod Ready on %s before the node", n.Name)
				}
			}
		}
	})

	It("restores a deleted CoreDNS Deployment and an edited Cilium DaemonSet on the event, with no new revision", func(ctx SpecContext) {
		before := releaseHistory(ctx, t.Client)

		var dep appsv1.Deployment
		key := types.NamespacedName{Namespace: "kube-system", Name: "coredns"}
		Expect(t.Client.Get(ctx, key, &dep)).To(Succeed())
		oldUID := dep.UID
		Expect(t.Client.Delete(ctx, &dep)).To(Succeed())
		Eventually(func(g Gomega) {
			var now appsv1.Deployment
			g.Expect(t.Client.Get(ctx, key, &now)).To(Succeed())
			g.Expect(now.UID).NotTo(Equal(oldUID))
			g.Expect(now.Spec.Replicas).To(Equal(ptr.To[int32](2)))
		}).WithContext(ctx).Should(Succeed())

		var ds appsv1.DaemonSet
		dsKey := types.NamespacedName{Namespace: "cozy-cilium", Name: "cilium"}
		Expect(t.Client.Get(ctx, dsKey, &ds)).To(Succeed())
		patch := client.MergeFrom(ds.DeepCopy())
		for i, e := range ds.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "KUBERNETES_SERVICE_PORT" {
				ds.Spec.Template.Spec.Containers[0].Env[i].Value = "1"
			}
		}
		Expect(t.Client.Patch(ctx, &ds, patch, client.FieldOwner("someone-else"))).To(Succeed())
		Eventually(func(g Gomega) string {
			var now appsv1.DaemonSet
			g.Expect(t.Client.Get(ctx, dsKey, &now)).To(Succeed())
			for _, e := range now.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "KUBERNETES_SERVICE_PORT" {
					return e.Value
				}
			}
			return ""
		}).WithContext(ctx).Should(Equal(fmt.Sprint(t.World.APIPort)))

		expectReady(ctx, t)
		Expect(releaseHistory(ctx, t.Client)).To(Equal(before), "drift correction must not write a Helm revision")
	})

	It("creates no new Helm revision when restarted", func(ctx SpecContext) {
		before := releaseHistory(ctx, t.Client)
		for i := range 2 {
			Expect(t.Operator.Procs[0].Restart(ctx)).To(Succeed())
			requestReconcile(ctx, t, fmt.Sprintf("restart-%d", i))
			expectReady(ctx, t)
			Expect(releaseHistory(ctx, t.Client)).To(Equal(before))
		}
	})

	It("upgrades on a value override, keeps it across restarts, and drops it when removed", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: "kube-system", Name: "coredns"}
		replicas := func(g Gomega) int32 {
			var d appsv1.Deployment
			g.Expect(t.Client.Get(ctx, key, &d)).To(Succeed())
			return *d.Spec.Replicas
		}
		// Ready at the new generation means the upgrade is rolled out, not
		// only written: the operator must not judge the cached Deployment
		// of before its own upgrade.
		expectRolledOut := func(want int32) {
			var d appsv1.Deployment
			Expect(t.Client.Get(ctx, key, &d)).To(Succeed())
			Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
			Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(want))
			Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(want))
		}
		coredns := func() []revision {
			var out []revision
			for _, r := range releaseHistory(ctx, t.Client) {
				if r.Release == "kube-system/coredns" {
					out = append(out, r)
				}
			}
			return out
		}
		withOverride := bundle.DeepCopy()
		withOverride.Spec.Components = map[string]tenantv1.ComponentOverride{"coredns": {Values: jsonValues(`{"coredns":{"replicaCount":3}}`)}}
		Expect(t.ApplyBundle(ctx, withOverride)).To(Succeed())
		Eventually(replicas).WithContext(ctx).Should(BeEquivalentTo(3))
		expectReady(ctx, t)
		expectRolledOut(3)
		Expect(coredns()).To(Equal([]revision{
			{Release: "kube-system/coredns", Version: 1, Status: "superseded"},
			{Release: "kube-system/coredns", Version: 2, Status: "deployed"},
		}))

		Expect(t.Operator.Procs[0].Restart(ctx)).To(Succeed())
		requestReconcile(ctx, t, "after-override")
		expectReady(ctx, t)
		Expect(replicas(Default)).To(BeEquivalentTo(3), "the override must survive a restart")
		Expect(coredns()).To(HaveLen(2))

		Expect(t.ApplyBundle(ctx, bundle)).To(Succeed())
		Eventually(replicas).WithContext(ctx).Should(BeEquivalentTo(2))
		expectReady(ctx, t)
		expectRolledOut(2)
		Expect(coredns()).To(ContainElement(revision{Release: "kube-system/coredns", Version: 3, Status: "deployed"}))
	})

	DescribeTable("reports bad input with a condition naming the field, keeps running and deletes nothing",
		func(ctx SpecContext, mutate func(*tenantv1.TenantBundle), reason string, stalled bool, field string) {
			uids := workloadUIDs(ctx, t)
			bad := bundle.DeepCopy()
			mutate(bad)
			Expect(t.ApplyBundle(ctx, bad)).To(Succeed())
			Eventually(bundleCondition(ctx, t, tenantv1.ReadyCondition)).WithContext(ctx).Should(And(
				HaveField("Status", Equal(metav1ConditionFalse)),
				HaveField("Reason", Equal(reason)),
				HaveField("Message", ContainSubstring(field)),
			))
			b, err := t.Bundle(ctx, "tenant")
			Expect(err).NotTo(HaveOccurred())
			Expect(conditions.IsStalled(b)).To(Equal(stalled), "Stalled: %v", conditions.Get(b, tenantv1.StalledCondition))
			Expect(conditions.IsReconciling(b)).To(Equal(!stalled))
			_, exited := t.Operator.Procs[0].ExitCode()
			Expect(exited).To(BeFalse(), "the operator must keep running")
			Expect(workloadUIDs(ctx, t)).To(Equal(uids), "bad input must not delete anything")

			Expect(t.ApplyBundle(ctx, bundle)).To(Succeed())
			expectReady(ctx, t)
		},
		Entry("an override for an unknown component", func(b *tenantv1.TenantBundle) {
			b.Spec.Components = map[string]tenantv1.ComponentOverride{"nope": {Values: jsonValues(`{}`)}}
		}, tenantv1.ReasonUnknownComponent, true, "spec.components.nope"),
		Entry("values the chart's schema rejects", func(b *tenantv1.TenantBundle) {
			b.Spec.Components = map[string]tenantv1.ComponentOverride{"cilium": {Values: jsonValues(`{"cilium":{"MTU":"not-a-number"}}`)}}
		}, tenantv1.ReasonValuesRejected, true, "spec.components.cilium.values"),
		Entry("a tag that is not in the registry", func(b *tenantv1.TenantBundle) {
			b.Spec.Packages.Tag = "v9.9.9"
		}, tenantv1.ReasonArtifactFailed, false, "spec.packages"),
		Entry("a digest the tag does not resolve to", func(b *tenantv1.TenantBundle) {
			b.Spec.Packages.Digest = "sha256:" + strings.Repeat("0", 64)
		}, tenantv1.ReasonDigestMismatch, true, "spec.packages.digest"),
		Entry("a missing API endpoint", func(b *tenantv1.TenantBundle) {
			b.Spec.Cluster.APIEndpoint = ""
		}, tenantv1.ReasonInvalidSpec, true, "spec.cluster.apiEndpoint"),
		Entry("an unknown bundle", func(b *tenantv1.TenantBundle) {
			b.Spec.Bundle = "nope"
		}, tenantv1.ReasonUnknownBundle, true, "spec.bundle"),
	)

	It("accepts a PackageSource and a Package written for the Cozystack platform, unchanged", func(ctx SpecContext) {
		dir, err := framework.TestdataDir("cozystack")
		Expect(err).NotTo(HaveOccurred())
		objs, err := apply.ReadManifests(os.DirFS(dir), "*.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(2))
		for _, o := range objs {
			want := o.DeepCopy()
			Expect(t.Client.Create(ctx, o)).To(Succeed())
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			Expect(t.Client.Get(ctx, client.ObjectKeyFromObject(o), got)).To(Succeed())
			gotSpec, err := json.Marshal(got.Object["spec"])
			Expect(err).NotTo(HaveOccurred())
			wantSpec, err := json.Marshal(want.Object["spec"])
			Expect(err).NotTo(HaveOccurred())
			Expect(gotSpec).To(MatchJSON(wantSpec), "%s: no field may be pruned or changed", o.GetKind())
		}
	})

	It("refuses a malformed TenantBundle at admission with the field named", func(ctx SpecContext) {
		bad := bundle.DeepCopy()
		bad.Spec.Cluster.APIEndpoint = "no-port-here"
		err := t.ApplyBundle(ctx, bad)
		Expect(err).To(MatchError(ContainSubstring("spec.cluster.apiEndpoint must be host:port")))
		bad = bundle.DeepCopy()
		bad.Spec.Packages.Tag = ""
		Expect(t.ApplyBundle(ctx, bad)).To(MatchError(ContainSubstring("spec.packages needs a tag or a digest")))
		expectReady(ctx, t)
	})
})

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
