package catalog

import (
	"context"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/seed"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/packages"
)

const psaLabel = "pod-security.kubernetes.io/enforce"

var _ = Describe("The cozy-in-cozy catalog", Ordered, func() {
	var (
		t        *framework.Tenant
		timeline *framework.Timeline
		seeded   *tenantv1.TenantBundle
	)

	BeforeAll(func(ctx SpecContext) {
		w, err := world.Start(ctx, world.Options{Name: "catalog",
			Nodes:          []world.NodeSpec{{Name: "worker-1"}, {Name: "worker-2"}},
			CNIPodSelector: framework.CNISelector})
		Expect(err).NotTo(HaveOccurred())
		framework.DeferCleanupWorld(w)
		url, _, err := framework.PushPackagesWithTestApps(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		t, err = framework.StartTenant(ctx, w, operatorBin, framework.SeedConfig(w))
		Expect(err).NotTo(HaveOccurred())
		recCtx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		timeline, err = framework.RecordTimeline(recCtx, w.Config)
		Expect(err).NotTo(HaveOccurred())

		By("seeding the TenantBundle with the management side's catalog sources")
		seeded = framework.Bundle(w, url)
		seeded.Spec.Catalog.Sources = managementSources()
		Expect(t.SeedBundle(ctx, seeded)).To(Succeed())
		_, err = t.RunFlux(ctx)
		Expect(err).NotTo(HaveOccurred())
		framework.ExpectReady(ctx, t)
		Eventually(func(g Gomega) {
			c := framework.Condition(ctx, t, tenantv1.CatalogReadyCondition)(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		}).WithContext(ctx).Should(Succeed())

		By("a tenant admin registering PackageSources of their own")
		for _, ps := range tenantSources() {
			Expect(framework.Apply(ctx, t.Client, ps)).To(Succeed())
		}
	})

	It("lists the catalog apps, from both registrations, without the addons", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "catalog", "list")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`(?m)^echo\s+management\s+default\s+-`))
		Expect(out).To(MatchRegexp(`(?m)^ingress\s+management\s+default\s+-`))
		Expect(out).To(MatchRegexp(`(?m)^node-agent\s+tenant\s+default\s+-`))
		Expect(out).NotTo(ContainSubstring("addon."))
	})

	It("holds an app until the package it depends on is Ready, and installs a non-privileged app straight away with its values layered", func(ctx SpecContext) {
		By("webapp depends on echo, which is not installed: no HelmRelease is written")
		out, err := t.CLI(ctx, cliBin, "--wait", "0", "catalog", "install", "webapp")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			pkg := currentPackage(ctx, g, t, "webapp")
			ready := conditions.Get(pkg, meta.ReadyCondition)
			g.Expect(ready.Reason).To(Equal(packages.ReasonDependenciesNotReady))
			g.Expect(ready.Message).To(ContainSubstring("echo"))
		}).WithContext(ctx).Should(Succeed())
		Expect(helmReleases(ctx, t, "webapp")).To(BeEmpty())

		By("echo renders nothing privileged: installed without any confirmation")
		out, err = t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "install", "echo", "--set", "replicas=2")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("echo is Ready"))
		pkg := &cozyv1.Package{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "echo"}, pkg)).To(Succeed())
		Expect(pkg.Status.Privileged).To(BeNil())

		By("values layered as in Cozystack: chart values, its values files, the cluster values, the Package's own")
		d := &appsv1.Deployment{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Namespace: "tenant-echo", Name: "echo"}, d)).To(Succeed())
		Expect(*d.Spec.Replicas).To(BeEquivalentTo(2))
		Expect(d.Annotations).To(HaveKeyWithValue("echo.example/cluster-domain", "cluster.local"))
		Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "MESSAGE", Value: "from the tenant values file"}))
		Expect(namespaceLabels(ctx, t, "tenant-echo")).NotTo(HaveKey(psaLabel))

		By("webapp follows once echo is Ready, and its release comes after echo's")
		Eventually(func(g Gomega) {
			g.Expect(conditions.IsReady(currentPackage(ctx, g, t, "webapp"))).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
		echo := timeline.MustFirst("Release", "tenant-echo", "echo v1", "deployed")
		web := timeline.MustFirst("Release", "tenant-echo", "webapp v1", "")
		Expect(web.RV).To(BeNumerically(">", echo.RV), timeline.String())
	})

	It("holds a privileged app until a tenant admin confirms what it renders", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "catalog", "install", "ingress")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(packages.ReasonPrivilegedNotConfirmed))
		Expect(out).To(ContainSubstring("DaemonSet ingress-controller: host namespaces (hostNetwork=true)"))
		Expect(out).To(ContainSubstring(`hostPort (container "controller" uses hostPorts 443, 80)`))
		Expect(out).To(ContainSubstring("ClusterRole ingress: reads Secrets cluster-wide"))
		Expect(out).To(ContainSubstring("install.privileged is set"))
		Expect(helmReleases(ctx, t, "ingress")).To(BeEmpty())
		Expect(apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Name: "cozy-ingress"}, &corev1.Namespace{}))).To(BeTrue(),
			"nothing of a held app is created, not even its namespace")

		out, err = t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "confirm", "ingress")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("confirming that ingress may be privileged"))
		Expect(out).To(ContainSubstring("ingress is Ready"))
		Expect(namespaceLabels(ctx, t, "cozy-ingress")).To(HaveKeyWithValue(psaLabel, "privileged"))
		hrs := helmReleases(ctx, t, "ingress")
		Expect(hrs).To(HaveLen(1))
		Expect(hrs[0].Labels).To(HaveKeyWithValue(packages.PrivilegedLabel, "true"))
	})

	It("holds an app that claims privileged: false but renders a privileged pod, and the management side can forbid it", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "catalog", "install", "node-agent")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(packages.ReasonPrivilegedNotConfirmed))
		Expect(out).To(ContainSubstring(`DaemonSet node-agent: hostPath volumes (volume "logs")`))
		Expect(out).NotTo(ContainSubstring("install.privileged is set"))

		By("the management side forbids privileged catalog apps in this tenant")
		forbidden := seeded.DeepCopy()
		forbidden.Spec.Catalog.PrivilegedApps = tenantv1.PrivilegedAppsForbidden
		Expect(seed.ApplyBundle(ctx, t.Client, forbidden)).To(Succeed())
		out, err = t.CLI(ctx, cliBin, "catalog", "confirm", "node-agent")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(packages.ReasonPrivilegedForbidden))
		Expect(helmReleases(ctx, t, "node-agent")).To(BeEmpty())

		By("an app installed before the ban is refused further changes but keeps running")
		Eventually(func(g Gomega) {
			stalled := conditions.Get(currentPackage(ctx, g, t, "ingress"), meta.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(packages.ReasonPrivilegedForbidden))
		}).WithContext(ctx).Should(Succeed())
		Expect(t.Client.Get(ctx, client.ObjectKey{Namespace: "cozy-ingress", Name: "ingress-controller"}, &appsv1.DaemonSet{})).To(Succeed())
		Expect(framework.ReleaseHistory(ctx, t.Client)).To(ContainElement(framework.Revision{Release: "cozy-ingress/ingress", Version: 1, Status: "deployed"}))

		By("lifting the ban installs the app already confirmed")
		Expect(seed.ApplyBundle(ctx, t.Client, seeded)).To(Succeed())
		for _, app := range []string{"node-agent", "ingress"} {
			Eventually(func(g Gomega) {
				g.Expect(conditions.IsReady(currentPackage(ctx, g, t, app))).To(BeTrue())
			}).WithContext(ctx).Should(Succeed())
		}
	})

	It("needs a new confirmation when an upgrade makes an app privileged, and keeps the running version until then", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "install", "probe")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("probe is Ready"))

		By("the tenant admin's source moves to the next chart version, which uses hostPID")
		next := tenantSources()[1]
		Expect(next.Name).To(Equal("probe"))
		next.Spec.Variants[0].Components[0].Path = "apps/probe-v2"
		Expect(framework.Apply(ctx, t.Client, next)).To(Succeed())

		By("installing it again reports on the new chart, not on the running version's Ready")
		out, err = t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "install", "probe")
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(packages.ReasonPrivilegedNotConfirmed))
		Eventually(func(g Gomega) {
			stalled := conditions.Get(currentPackage(ctx, g, t, "probe"), meta.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(packages.ReasonPrivilegedNotConfirmed))
			g.Expect(stalled.Message).To(ContainSubstring("Deployment probe: host namespaces (hostPID=true)"))
		}).WithContext(ctx).Should(Succeed())
		hist, err := framework.ReleaseHistory(ctx, t.Client)
		Expect(err).NotTo(HaveOccurred())
		Expect(hist).To(ContainElement(framework.Revision{Release: "tenant-probe/probe", Version: 1, Status: "deployed"}))
		Expect(hist).NotTo(ContainElement(HaveField("Version", 2)), "nothing upgraded before the confirmation")

		out, err = t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "confirm", "probe")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("probe is Ready"))
		Expect(framework.ReleaseHistory(ctx, t.Client)).To(ContainElement(framework.Revision{Release: "tenant-probe/probe", Version: 2, Status: "deployed"}))
		Expect(namespaceLabels(ctx, t, "tenant-probe")).To(HaveKeyWithValue(psaLabel, "privileged"))
	})

	It("uninstalls an app: its release and its namespace's pod-security label are gone", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "uninstall", "ingress")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			releases, err := framework.Releases(ctx, t.Client)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(releases).NotTo(ContainElement("cozy-ingress/ingress"))
		}).WithContext(ctx).Should(Succeed())
		Expect(namespaceLabels(ctx, t, "cozy-ingress")).NotTo(HaveKey(psaLabel))
		Expect(namespaceLabels(ctx, t, "tenant-probe")).To(HaveKeyWithValue(psaLabel, "privileged"), "other apps keep theirs")
		out, err = t.CLI(ctx, cliBin, "catalog", "list")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`(?m)^ingress\s+management\s+default\s+-`))
	})
})

// managementSources are the catalog sources the management side lists in
// the TenantBundle; they point at the packages artifact's apps/.
func managementSources() []tenantv1.CatalogSource {
	return []tenantv1.CatalogSource{
		{Name: "echo", Variants: []cozyv1.Variant{{Name: "default", Components: []cozyv1.Component{{
			Name: "echo", Path: "apps/echo", ValuesFiles: []string{"values.yaml", "values-tenant.yaml"},
			Install: &cozyv1.ComponentInstall{Namespace: "tenant-echo"},
		}}}}},
		{Name: "webapp", Variants: []cozyv1.Variant{{Name: "default", DependsOn: []string{"echo"}, Components: []cozyv1.Component{{
			Name: "webapp", Path: "apps/webapp", Install: &cozyv1.ComponentInstall{Namespace: "tenant-echo"},
		}}}}},
		{Name: "ingress", Variants: []cozyv1.Variant{{Name: "default", Components: []cozyv1.Component{{
			Name: "ingress", Path: "apps/ingress", Install: &cozyv1.ComponentInstall{Namespace: "cozy-ingress", Privileged: true},
		}}}}},
	}
}

// tenantSources are PackageSources a tenant admin applies; they name the
// packages artifact's OCIRepository themselves.
func tenantSources() []*cozyv1.PackageSource {
	ps := func(name, path, ns string) *cozyv1.PackageSource {
		return &cozyv1.PackageSource{
			TypeMeta:   metav1.TypeMeta{APIVersion: cozyv1.GroupVersion.String(), Kind: "PackageSource"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: cozyv1.PackageSourceSpec{
				SourceRef: &cozyv1.PackageSourceRef{Kind: "OCIRepository", Name: "cozystack-packages", Namespace: "cozy-fluxcd", Path: "/"},
				Variants: []cozyv1.Variant{{Name: "default", Components: []cozyv1.Component{{
					Name: name, Path: path, Install: &cozyv1.ComponentInstall{Namespace: ns, Privileged: false},
				}}}},
			},
		}
	}
	return []*cozyv1.PackageSource{ps("node-agent", "apps/node-agent", "tenant-logs"), ps("probe", "apps/probe", "tenant-probe")}
}

// currentPackage reads a Package, failing the attempt until the operator
// has handled its current generation.
func currentPackage(ctx context.Context, g Gomega, t *framework.Tenant, name string) *cozyv1.Package {
	pkg := &cozyv1.Package{}
	g.Expect(t.Client.Get(ctx, client.ObjectKey{Name: name}, pkg)).To(Succeed())
	g.Expect(pkg.Status.ObservedGeneration).To(Equal(pkg.Generation))
	g.Expect(conditions.Get(pkg, meta.ReadyCondition)).NotTo(BeNil())
	return pkg
}

func helmReleases(ctx context.Context, t *framework.Tenant, pkg string) []helmv2.HelmRelease {
	var list helmv2.HelmReleaseList
	Expect(t.Client.List(ctx, &list, client.MatchingLabels{packages.PackageLabel: pkg})).To(Succeed())
	return list.Items
}

func namespaceLabels(ctx context.Context, t *framework.Tenant, name string) map[string]string {
	ns := &corev1.Namespace{}
	Expect(t.Client.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
	return ns.Labels
}
