package catalog

import (
	"context"
	"maps"
	"slices"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	e2epackages "github.com/cozystack/tenant-operator/e2e/packages"
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
		var url string
		var err error
		t, url = startCatalogTenant(ctx, "catalog", "worker-1", "worker-2")
		w := t.World
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
		Expect(namespaceLabels(ctx, t, "tenant-echo")).To(HaveKeyWithValue(psaLabel, "baseline"),
			"a catalog app's namespace refuses privileged pods at the API server")

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

		By("the confirmation of a cluster-wide finding is what grants its identity rights beyond the namespace, those it needs")
		Expect(hrs[0].Spec.ServiceAccountName).To(Equal(packages.AppServiceAccount("ingress")))
		crb := &rbacv1.ClusterRoleBinding{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: packages.AppClusterBinding("ingress")}, crb)).To(Succeed())
		Expect(crb.RoleRef.Name).To(Equal(packages.AppClusterBinding("ingress")))
		Expect(crb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: packages.AppServiceAccount("ingress"), Namespace: "cozy-ingress"}))
		role := &rbacv1.ClusterRole{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: packages.AppClusterBinding("ingress")}, role)).To(Succeed())
		Expect(role.Rules).To(ContainElements(
			rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings"},
				ResourceNames: []string{"ingress"}, Verbs: []string{"update", "patch", "delete"}}),
			"the kind of its confirmed finding; the binding it was judged to make, by name")
		Expect(role.Rules).NotTo(ContainElement(HaveField("Resources", ContainElement("*"))), "the kinds it renders, not everything")
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

var _ = Describe("The platform's enforcement of the catalog gate", Ordered, func() {
	var (
		t      *framework.Tenant
		seeded *tenantv1.TenantBundle
	)

	BeforeAll(func(ctx SpecContext) {
		var url string
		t, url = startCatalogTenant(ctx, "catalog-gate", "worker-1")
		seeded = framework.Bundle(t.World, url)
		Expect(t.SeedBundle(ctx, seeded)).To(Succeed())
		_, err := t.RunFlux(ctx)
		Expect(err).NotTo(HaveOccurred())
		framework.ExpectReady(ctx, t)
		for _, name := range append(slices.Sorted(maps.Keys(e2epackages.HostileCharts)), "spawner") {
			Expect(framework.Apply(ctx, t.Client, tenantSource(name, "apps/"+name, "tenant-"+name))).To(Succeed())
		}
		Expect(framework.Apply(ctx, t.Client, tenantSource("sneaky", "apps/node-agent", "tenant-sneaky"))).To(Succeed())
	})

	It("holds every adversarial chart until a tenant admin confirms what it does", func(ctx SpecContext) {
		for _, name := range slices.Sorted(maps.Keys(e2epackages.HostileCharts)) {
			By(name)
			out, err := t.CLI(ctx, cliBin, "catalog", "install", name)
			Expect(err).To(HaveOccurred(), out)
			Expect(out).To(ContainSubstring(packages.ReasonPrivilegedNotConfirmed))
			Expect(out).To(ContainSubstring(e2epackages.HostileCharts[name]))
			Expect(helmReleases(ctx, t, name)).To(BeEmpty())
			Eventually(func(g Gomega) []string {
				reasons, err := framework.EventReasons(ctx, t.Client, "Package", name)
				g.Expect(err).NotTo(HaveOccurred())
				return reasons
			}).WithContext(ctx).Should(ContainElement(HavePrefix(packages.ReasonPrivilegedNotConfirmed+": ")), "kubectl describe says why it waits")
		}

		By("the management side forbids privileged catalog apps: every one of them is refused")
		forbidden := seeded.DeepCopy()
		forbidden.Spec.Catalog.PrivilegedApps = tenantv1.PrivilegedAppsForbidden
		Expect(seed.ApplyBundle(ctx, t.Client, forbidden)).To(Succeed())
		for _, name := range slices.Sorted(maps.Keys(e2epackages.HostileCharts)) {
			Eventually(func(g Gomega) {
				stalled := conditions.Get(currentPackage(ctx, g, t, name), meta.StalledCondition)
				g.Expect(stalled).NotTo(BeNil())
				g.Expect(stalled.Reason).To(Equal(packages.ReasonPrivilegedForbidden), name)
			}).WithContext(ctx).Should(Succeed())
			Expect(helmReleases(ctx, t, name)).To(BeEmpty())
		}
		Expect(seed.ApplyBundle(ctx, t.Client, seeded)).To(Succeed())

		By("a confirmed CRD installs, with the cluster rights the confirmation granted")
		out, err := t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "confirm", "hostile-crds")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("hostile-crds is Ready"))
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "widgets.hostile.example"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
		role := &rbacv1.ClusterRole{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: packages.AppClusterBinding("hostile-crds")}, role)).To(Succeed())
		Expect(role.Rules).To(ConsistOf(HaveField("Resources", ConsistOf("customresourcedefinitions"))))
	})

	It("installs a catalog app as an identity of its own that cannot act beyond its namespace", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "install", "spawner")
		Expect(err).NotTo(HaveOccurred(), out)
		hrs := helmReleases(ctx, t, "spawner")
		Expect(hrs).To(HaveLen(1))
		sa := packages.AppServiceAccount("spawner")
		Expect(hrs[0].Spec.ServiceAccountName).To(Equal(sa))
		Expect(apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Name: packages.AppClusterBinding("spawner")}, &rbacv1.ClusterRoleBinding{}))).To(BeTrue(),
			"nothing was confirmed, so nothing beyond the namespace is granted")

		as := impersonate(t, "tenant-spawner", sa)
		Expect(as.Create(ctx, configMap("tenant-spawner", "mine"))).To(Succeed(), "its own namespace is its to manage")
		Expect(apierrors.IsForbidden(as.Create(ctx, configMap("kube-system", "theirs")))).To(BeTrue(), "another namespace is not")
		grant := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "spawner-escalates"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "tenant-spawner"}}}
		Expect(apierrors.IsForbidden(as.Create(ctx, grant))).To(BeTrue(), "nor is the cluster")
	})

	It("installs an unprivileged app with cluster-scoped objects without a confirmation, with rights on those objects by name", func(ctx SpecContext) {
		Expect(framework.Apply(ctx, t.Client, tenantSource("reader", "apps/reader", "tenant-reader"))).To(Succeed())
		out, err := t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "install", "reader")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("reader is Ready"))
		role := &rbacv1.ClusterRole{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: packages.AppClusterBinding("reader")}, role)).To(Succeed())
		for _, rule := range role.Rules {
			if slices.ContainsFunc(rule.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" && v != "create" }) {
				Expect(rule.ResourceNames).To(ConsistOf("reader"), "%+v", rule)
			}
			Expect(rule.Verbs).NotTo(ContainElements("bind", "escalate"), "%+v", rule)
		}
		Expect(role.Rules).To(ContainElement(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes", "pods"},
			Verbs: []string{"get", "list", "watch"}}), "the reads its own ClusterRole grants, which the API server requires of whoever creates and binds it")
	})

	It("puts back the cluster values Flux layers into a release when a namespace editor changes them", func(ctx SpecContext) {
		key := client.ObjectKey{Namespace: "tenant-spawner", Name: packages.ValuesSecret}
		classified := &corev1.Secret{}
		Expect(t.Client.Get(ctx, key, classified)).To(Succeed())
		edited := classified.DeepCopy()
		edited.Data["values.yaml"] = []byte("_cluster: {hostile: true}\n")
		Expect(t.Client.Update(ctx, edited)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &corev1.Secret{}
			g.Expect(t.Client.Get(ctx, key, cur)).To(Succeed())
			g.Expect(cur.Data).To(Equal(classified.Data))
		}).WithContext(ctx).Should(Succeed())

		Expect(t.Client.Delete(ctx, classified)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &corev1.Secret{}
			g.Expect(t.Client.Get(ctx, key, cur)).To(Succeed())
			g.Expect(cur.Data).To(Equal(classified.Data))
		}).WithContext(ctx).Should(Succeed())
	})

	It("refuses at the API server a privileged pod the app starts at run time, which no rendering shows", func(ctx SpecContext) {
		Expect(namespaceLabels(ctx, t, "tenant-spawner")).To(HaveKeyWithValue(psaLabel, "baseline"))
		app := impersonate(t, "tenant-spawner", "spawner")
		Expect(app.Create(ctx, pod("tenant-spawner", "plain", false))).To(Succeed(), "its RBAC lets it create pods")
		err := app.Create(ctx, pod("tenant-spawner", "sneaky", true))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("violates PodSecurity"))
	})

	It("removes an app's identity and its namespace's level once helm-controller has uninstalled it", func(ctx SpecContext) {
		out, err := t.CLI(ctx, cliBin, "--wait", "2m", "catalog", "uninstall", "spawner")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			releases, err := framework.Releases(ctx, t.Client)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(releases).NotTo(ContainElement("tenant-spawner/spawner"))
			sa := &corev1.ServiceAccount{}
			err = t.Client.Get(ctx, client.ObjectKey{Namespace: "tenant-spawner", Name: packages.AppServiceAccount("spawner")}, sa)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceAccount: %v", err)
			err = t.Client.Get(ctx, client.ObjectKey{Namespace: "tenant-spawner", Name: packages.AppServiceAccount("spawner")}, &rbacv1.RoleBinding{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "RoleBinding: %v", err)
			g.Expect(namespaceLabels(ctx, t, "tenant-spawner")).NotTo(HaveKey(psaLabel))
		}).WithContext(ctx).Should(Succeed())
	})

	It("refuses at the API server a privileged pod that the classifier was made to miss", func(ctx SpecContext) {
		By("running an operator built blind to what pods do (-tags classifierblind)")
		Expect(t.RunOperator(ctx, blindOperatorBin)).To(Succeed())
		out, err := t.CLI(ctx, cliBin, "--wait", "0", "catalog", "install", "sneaky")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			ds := &appsv1.DaemonSet{}
			g.Expect(t.Client.Get(ctx, client.ObjectKey{Namespace: "tenant-sneaky", Name: "sneaky"}, ds)).To(Succeed())
		}).WithContext(ctx).Should(Succeed(), "helm-controller installed what the gate let through")

		By("the DaemonSet's pods are refused by Pod Security admission")
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(t.Client.List(ctx, &events, client.InNamespace("tenant-sneaky"))).To(Succeed())
			var refused []string
			for _, e := range events.Items {
				if e.InvolvedObject.Kind == "DaemonSet" && e.Reason == "FailedCreate" && strings.Contains(e.Message, "violates PodSecurity") {
					refused = append(refused, e.Message)
				}
			}
			g.Expect(refused).NotTo(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
		var pods corev1.PodList
		Expect(t.Client.List(ctx, &pods, client.InNamespace("tenant-sneaky"))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())

		By("the real classifier holds it again; what is installed is left as it is")
		Expect(t.RunOperator(ctx, operatorBin)).To(Succeed())
		Eventually(func(g Gomega) {
			stalled := conditions.Get(currentPackage(ctx, g, t, "sneaky"), meta.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(packages.ReasonPrivilegedNotConfirmed))
		}).WithContext(ctx).Should(Succeed())
	})
})

// startCatalogTenant starts a world of the named nodes with Cozystack's tree
// and the test apps pushed, and the operator running; it returns the tenant
// and the packages artifact's URL.
func startCatalogTenant(ctx context.Context, name string, nodes ...string) (*framework.Tenant, string) {
	opts := world.Options{Name: name, CNIPodSelector: framework.CNISelector}
	for _, n := range nodes {
		opts.Nodes = append(opts.Nodes, world.NodeSpec{Name: n})
	}
	w, err := world.Start(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	framework.DeferCleanupWorld(w)
	url, _, err := framework.PushPackagesWithTestApps(ctx, w)
	Expect(err).NotTo(HaveOccurred())
	t, err := framework.StartTenant(ctx, w, operatorBin, framework.SeedConfig(w))
	Expect(err).NotTo(HaveOccurred())
	return t, url
}

// impersonate is a client acting as the ServiceAccount ns/name.
func impersonate(t *framework.Tenant, ns, name string) client.Client {
	cfg := rest.CopyConfig(t.World.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// pod is a pod for the world's nodes; a privileged one shares the node's
// process namespace.
func pod(ns, name string, privileged bool) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{HostPID: privileged, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
}

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
	return []*cozyv1.PackageSource{tenantSource("node-agent", "apps/node-agent", "tenant-logs"), tenantSource("probe", "apps/probe", "tenant-probe")}
}

// tenantSource is a PackageSource of one component at path of the packages
// artifact, installed into ns, claiming nothing privileged.
func tenantSource(name, path, ns string) *cozyv1.PackageSource {
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
