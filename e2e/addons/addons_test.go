package addons

import (
	"context"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/seed"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

var _ = Describe("Addons reconciled by the tenant's own Flux", Ordered, func() {
	var (
		t        *framework.Tenant
		timeline *framework.Timeline
		seeded   *tenantv1.TenantBundle
	)

	BeforeAll(func(ctx SpecContext) {
		w, err := world.Start(ctx, world.Options{Name: "addons",
			Nodes:          []world.NodeSpec{{Name: "worker-1"}, {Name: "worker-2"}, {Name: "worker-3"}},
			CNIPodSelector: framework.CNISelector})
		Expect(err).NotTo(HaveOccurred())
		framework.DeferCleanupWorld(w)
		url, _, err := framework.PushPackages(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		t, err = framework.StartTenant(ctx, w, operatorBin, framework.SeedConfig(w))
		Expect(err).NotTo(HaveOccurred())
		recCtx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		timeline, err = framework.RecordTimeline(recCtx, w.Config)
		Expect(err).NotTo(HaveOccurred())

		By("seeding the TenantBundle as the management side does, with its addon choices")
		seeded = framework.Bundle(w, url)
		seeded.Spec.Addons = map[string]tenantv1.AddonSpec{"cert-manager-crds": {Enabled: ptr.To(false)}}
		Expect(t.SeedBundle(ctx, seeded)).To(Succeed())

		By("running Flux from the Deployment the operator applied")
		_, err = t.RunFlux(ctx)
		Expect(err).NotTo(HaveOccurred())
		framework.ExpectReady(ctx, t)
	})

	It("installs the always-on addons after the network tier, each Package Ready only when its HelmRelease is", func(ctx SpecContext) {
		Eventually(addonsReady(ctx, t)).WithContext(ctx).Should(Succeed())
		for _, name := range []string{"prometheus-operator-crds", "metrics-server"} {
			pkg := &cozyv1.Package{}
			Expect(t.Client.Get(ctx, client.ObjectKey{Name: "addon." + name}, pkg)).To(Succeed())
			Expect(conditions.IsReady(pkg)).To(BeTrue(), "%s: %v", name, conditions.Get(pkg, meta.ReadyCondition))
			var hrs helmv2.HelmReleaseList
			Expect(t.Client.List(ctx, &hrs, client.MatchingLabels{"cozystack.io/package": pkg.Name})).To(Succeed())
			Expect(hrs.Items).To(HaveLen(1))
			Expect(apimeta.IsStatusConditionTrue(hrs.Items[0].Status.Conditions, meta.ReadyCondition)).To(BeTrue())
			Expect(hrs.Items[0].Spec.ChartRef.Kind).To(Equal("ExternalArtifact"))
			// As Cozystack's apps/kubernetes sets them.
			Expect(hrs.Items[0].Spec.Timeout).To(Equal(&metav1.Duration{Duration: 10 * time.Minute}))
			Expect(hrs.Items[0].Spec.Install.Strategy.Name).To(Equal(string(helmv2.ActionStrategyRetryOnFailure)))
		}
		By("metrics-server's aggregated API wired to its own Service and container port")
		api := &unstructured.Unstructured{}
		api.SetAPIVersion("apiregistration.k8s.io/v1")
		api.SetKind("APIService")
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "v1beta1.metrics.k8s.io"}, api)).To(Succeed())
		Expect(api.Object["spec"]).To(And(
			HaveKeyWithValue("group", "metrics.k8s.io"),
			HaveKeyWithValue("service", And(HaveKeyWithValue("name", "metrics-server"), HaveKeyWithValue("namespace", "cozy-monitoring"))),
		))
		var svc corev1.Service
		Expect(t.Client.Get(ctx, client.ObjectKey{Namespace: "cozy-monitoring", Name: "metrics-server"}, &svc)).To(Succeed())
		Expect(svc.Spec.Ports).To(HaveLen(1))
		var msDeploy appsv1.Deployment
		Expect(t.Client.Get(ctx, client.ObjectKey{Namespace: "cozy-monitoring", Name: "metrics-server"}, &msDeploy)).To(Succeed())
		Expect(msDeploy.Spec.Template.Spec.Containers[0].Ports).To(ContainElement(And(
			HaveField("Name", svc.Spec.Ports[0].TargetPort.StrVal), HaveField("ContainerPort", BeEquivalentTo(4443)))))

		By("metrics-server (an aggregated API) was installed only after Cilium was Ready, and after its CRD dependency")
		cilium := timeline.MustFirst("DaemonSet", "cozy-cilium", "cilium", "Ready")
		crds := timeline.MustFirst("Release", "cozy-victoria-metrics-operator", "prometheus-operator-crds v1", "deployed")
		ms := timeline.MustFirst("Release", "cozy-monitoring", "metrics-server v1", "")
		Expect(ms.RV).To(BeNumerically(">", cilium.RV), timeline.String())
		Expect(ms.RV).To(BeNumerically(">", crds.RV), timeline.String())
		By("Flux itself was applied only once the network tier was Ready, off the bootstrap's critical path")
		coredns := timeline.MustFirst("Release", "kube-system", "coredns v1", "deployed")
		flux := timeline.MustFirst("Deployment", "cozy-fluxcd", "flux", "Created")
		Expect(flux.RV).To(BeNumerically(">", cilium.RV), timeline.String())
		Expect(flux.RV).To(BeNumerically(">", coredns.RV), timeline.String())
		By("the management side's choice is off, so cert-manager-crds is not installed")
		Expect(apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Name: "addon.cert-manager-crds"}, &cozyv1.Package{}))).To(BeTrue())
	})

	It("puts back what the addon tier applied when it is edited or deleted behind its back", func(ctx SpecContext) {
		By("an addon's PackageSource deleted")
		ps := &cozyv1.PackageSource{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "addon.metrics-server"}, ps)).To(Succeed())
		uid := ps.UID
		Expect(t.Client.Delete(ctx, ps)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &cozyv1.PackageSource{}
			g.Expect(t.Client.Get(ctx, client.ObjectKey{Name: "addon.metrics-server"}, cur)).To(Succeed())
			g.Expect(cur.UID).NotTo(Equal(uid))
		}).WithContext(ctx).Should(Succeed())

		By("the packages OCIRepository re-pointed at another artifact")
		repo := &sourcev1.OCIRepository{}
		key := client.ObjectKey{Namespace: "cozy-fluxcd", Name: "cozystack-packages"}
		Expect(t.Client.Get(ctx, key, repo)).To(Succeed())
		want := repo.Spec.DeepCopy()
		repo.Spec.URL = "oci://127.0.0.1:1/elsewhere"
		repo.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "latest"}
		Expect(t.Client.Update(ctx, repo)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &sourcev1.OCIRepository{}
			g.Expect(t.Client.Get(ctx, key, cur)).To(Succeed())
			g.Expect(cur.Spec.URL).To(Equal(want.URL))
			g.Expect(cur.Spec.Reference).To(Equal(want.Reference))
		}).WithContext(ctx).Should(Succeed())
		Eventually(addonsReady(ctx, t)).WithContext(ctx).Should(Succeed())
	})

	It("enables cert-manager from the CLI: its CRDs first, both Ready", func(ctx SpecContext) {
		By("refusing an unknown addon by name")
		out, err := t.CLI(ctx, cliBin, "addons", "enable", "cert-manger")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(`unknown addon "cert-manger"`))

		By("refusing cert-manager while the management side keeps its CRDs off")
		out, err = t.CLI(ctx, cliBin, "addons", "enable", "cert-manager")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("cert-manager-crds is disabled but needed by cert-manager"))

		out, err = t.CLI(ctx, cliBin, "addons", "enable", "cert-manager-crds")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = t.CLI(ctx, cliBin, "addons", "enable", "cert-manager")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(addonsReady(ctx, t)).WithContext(ctx).Should(Succeed())
		crds := timeline.MustFirst("Release", "cozy-cert-manager-crds", "cert-manager-crds v1", "deployed")
		cm := timeline.MustFirst("Release", "cozy-cert-manager", "cert-manager v1", "")
		Expect(cm.RV).To(BeNumerically(">", crds.RV), timeline.String())

		out, err = t.CLI(ctx, cliBin, "addons", "list")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`(?m)^cert-manager\s+true\s+tenant \(kubectl-tenant\)\s+True`))
		Expect(out).To(MatchRegexp(`(?m)^metrics-server\s+true\s+default\s+True`))
	})

	It("refuses to disable the CRDs while cert-manager is on, from the CLI and in the spec", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "addons", "disable", "cert-manager-crds")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("cert-manager-crds is disabled but needed by cert-manager"))

		By("an edit that bypasses the CLI is Stalled, naming the dependent, and removes nothing")
		editBundle(ctx, t, func(b *tenantv1.TenantBundle) {
			b.Spec.Addons["cert-manager-crds"] = tenantv1.AddonSpec{Enabled: ptr.To(false)}
		})
		Eventually(func(g Gomega) {
			c := framework.Condition(ctx, t, tenantv1.StalledCondition)(g)
			g.Expect(c.Reason).To(Equal(tenantv1.ReasonDependencyDisabled))
			g.Expect(c.Message).To(ContainSubstring("needed by cert-manager"))
		}).WithContext(ctx).Should(Succeed())
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "addon.cert-manager-crds"}, &cozyv1.Package{})).To(Succeed())

		out, err = t.CLI(ctx, cliBin, "addons", "enable", "cert-manager-crds")
		Expect(err).NotTo(HaveOccurred(), out)
		framework.ExpectReady(ctx, t)
	})

	It("keeps a tenant admin's toggle over a re-seed, unless the management side changes its own value", func(ctx SpecContext) {
		Expect(seed.ApplyBundle(ctx, t.Client, seeded)).To(Succeed())
		framework.ExpectReady(ctx, t)
		b, err := t.Bundle(ctx, "tenant")
		Expect(err).NotTo(HaveOccurred())
		Expect(*b.Spec.Addons["cert-manager-crds"].Enabled).To(BeTrue())
		Eventually(addonsReady(ctx, t)).WithContext(ctx).Should(Succeed())

		By("the management side changing its own value of another addon wins")
		changed := seeded.DeepCopy()
		changed.Spec.Addons["velero"] = tenantv1.AddonSpec{Enabled: ptr.To(false)}
		Expect(seed.ApplyBundle(ctx, t.Client, changed)).To(Succeed())
		out, err := t.CLI(ctx, cliBin, "addons", "enable", "velero")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(seed.ApplyBundle(ctx, t.Client, changed)).To(Succeed())
		b, err = t.Bundle(ctx, "tenant")
		Expect(err).NotTo(HaveOccurred())
		Expect(*b.Spec.Addons["velero"].Enabled).To(BeTrue(), "unchanged management value must not undo the tenant's toggle")
		changed.Spec.Addons["velero"] = tenantv1.AddonSpec{Enabled: ptr.To(true)}
		Expect(seed.ApplyBundle(ctx, t.Client, changed)).To(Succeed())
		changed.Spec.Addons["velero"] = tenantv1.AddonSpec{Enabled: ptr.To(false)}
		Expect(seed.ApplyBundle(ctx, t.Client, changed)).To(Succeed())
		b, err = t.Bundle(ctx, "tenant")
		Expect(err).NotTo(HaveOccurred())
		Expect(*b.Spec.Addons["velero"].Enabled).To(BeFalse(), "a changed management value wins")
		Eventually(func() bool {
			return apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Namespace: "cozy-velero", Name: "velero"}, &helmv2.HelmRelease{}))
		}).WithContext(ctx).Should(BeTrue())
		Eventually(addonsReady(ctx, t)).WithContext(ctx).Should(Succeed())
		seeded = changed
	})

	It("uninstalls an addon that is disabled, and its release is gone", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "addons", "disable", "cert-manager")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Name: "addon.cert-manager"}, &cozyv1.Package{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Namespace: "cozy-cert-manager", Name: "cert-manager"}, &helmv2.HelmRelease{}))).To(BeTrue())
			var deps appsv1.DeploymentList
			g.Expect(t.Client.List(ctx, &deps, client.InNamespace("cozy-cert-manager"))).To(Succeed())
			g.Expect(deps.Items).To(BeEmpty())
			releases, err := framework.Releases(ctx, t.Client)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(releases).NotTo(ContainElement("cozy-cert-manager/cert-manager"))
			g.Expect(releases).To(ContainElement("cozy-cert-manager-crds/cert-manager-crds"))
		}).WithContext(ctx).Should(Succeed())
		Eventually(addonsReady(ctx, t)).WithContext(ctx).Should(Succeed())
	})

	It("refuses values the chart's schema rejects, and reports a failing chart with Flux's reason, the rest unaffected", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "addons", "set", "velero", `{"velero":{"terminationGracePeriodSeconds":"forever"}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = t.CLI(ctx, cliBin, "addons", "enable", "velero")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("ValuesRejected"))
		Expect(out).To(ContainSubstring("spec.components.velero.values"))
		Eventually(func(g Gomega) {
			pkg := &cozyv1.Package{}
			g.Expect(t.Client.Get(ctx, client.ObjectKey{Name: "addon.velero"}, pkg)).To(Succeed())
			stalled := conditions.Get(pkg, meta.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal("ValuesRejected"))
			g.Expect(stalled.Message).To(ContainSubstring("spec.components.velero.values"))
		}).WithContext(ctx).Should(Succeed())
		Expect(apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Namespace: "cozy-velero", Name: "velero"}, &helmv2.HelmRelease{}))).To(BeTrue())

		By("a value the schema allows but the API server refuses fails the install in Flux")
		out, err = t.CLI(ctx, cliBin, "addons", "set", "velero", `{"velero":{"podLabels":{"not a label key":"x"}}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			pkg := &cozyv1.Package{}
			g.Expect(t.Client.Get(ctx, client.ObjectKey{Name: "addon.velero"}, pkg)).To(Succeed())
			ready := conditions.Get(pkg, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(helmv2.InstallFailedReason))
			addons := framework.Condition(ctx, t, tenantv1.AddonsReadyCondition)(g)
			g.Expect(addons.Reason).To(Equal(tenantv1.ReasonAddonFailed))
			g.Expect(addons.Message).To(ContainSubstring("velero: InstallFailed"))
		}).WithContext(ctx).Should(Succeed())
		framework.ExpectReady(ctx, t)
		for _, name := range []string{"prometheus-operator-crds", "metrics-server", "cert-manager-crds"} {
			pkg := &cozyv1.Package{}
			Expect(t.Client.Get(ctx, client.ObjectKey{Name: "addon." + name}, pkg)).To(Succeed())
			Expect(conditions.IsReady(pkg)).To(BeTrue(), name)
		}
	})

	It("refuses an addon that needs where the tenant sits on the platform until the seed says it, and then passes the management side's values", func(ctx SpecContext) {
		editBundle(ctx, t, func(b *tenantv1.TenantBundle) {
			b.Spec.Addons["monitoring-agents"] = tenantv1.AddonSpec{Enabled: ptr.To(true)}
		})
		Eventually(func(g Gomega) {
			c := framework.Condition(ctx, t, tenantv1.AddonsReadyCondition)(g)
			g.Expect(c.Reason).To(Equal(tenantv1.ReasonMissingPlatformFacts))
			g.Expect(c.Message).To(ContainSubstring("spec.platform.monitoringNamespace"))
		}).WithContext(ctx).Should(Succeed())
		Expect(apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Name: "addon.monitoring-agents"}, &cozyv1.Package{}))).To(BeTrue())

		By("the management side seeding spec.platform")
		editBundle(ctx, t, func(b *tenantv1.TenantBundle) {
			b.Spec.Platform = tenantv1.PlatformFacts{ClusterName: "kubernetes-foo", Namespace: "tenant-foo", MonitoringNamespace: "tenant-root"}
		})
		Eventually(func(g Gomega) {
			var hr helmv2.HelmRelease
			g.Expect(t.Client.Get(ctx, client.ObjectKey{Namespace: "cozy-monitoring", Name: "cozy-monitoring-agents"}, &hr)).To(Succeed())
			g.Expect(string(hr.Spec.Values.Raw)).To(ContainSubstring("http://vminsert-shortterm.tenant-root.svc.cozy.local:8480/insert/0/prometheus"))
		}).WithContext(ctx).Should(Succeed())

		editBundle(ctx, t, func(b *tenantv1.TenantBundle) { delete(b.Spec.Addons, "monitoring-agents") })
		framework.ExpectReady(ctx, t)
	})
})

// editBundle changes the TenantBundle as a tenant admin's kubectl edit
// would: a merge patch of what edit changes.
func editBundle(ctx context.Context, t *framework.Tenant, edit func(*tenantv1.TenantBundle)) {
	b, err := t.Bundle(ctx, "tenant")
	Expect(err).NotTo(HaveOccurred())
	patch := client.MergeFrom(b.DeepCopy())
	edit(b)
	Expect(t.Client.Patch(ctx, b, patch)).To(Succeed())
}

// addonsReady passes once AddonsReady is True for the current generation.
func addonsReady(ctx context.Context, t *framework.Tenant) func(Gomega) {
	return func(g Gomega) {
		c := framework.Condition(ctx, t, tenantv1.AddonsReadyCondition)(g)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}
}
