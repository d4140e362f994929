package seeding

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/scheme"
	"github.com/cozystack/tenant-operator/internal/seed"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	seederv1 "github.com/cozystack/tenant-operator/operator/apis/seeder/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/seeder"
)

const ns = "tenant-foo"

var _ = Describe("Seeding a tenant from the management side", Ordered, func() {
	var (
		mgmt, tw   *world.World
		mc         client.Client
		t          *framework.Tenant
		kubeconfig []byte
		operator   *world.Workload
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		mgmt, err = world.Start(ctx, world.Options{Name: "mgmt", Nodes: []world.NodeSpec{{Name: "mgmt-1"}}})
		Expect(err).NotTo(HaveOccurred())
		framework.DeferCleanupWorld(mgmt)
		// KubeVirt workers: their CCM is the platform's (apps/kubernetes
		// renders <cluster>-kccm next to the control plane), and the tenant's
		// cloud simulator follows its pod there.
		var workers []world.NodeSpec
		for _, n := range []string{"worker-1", "worker-2", "worker-3"} {
			workers = append(workers, world.NodeSpec{Name: n, Uninitialized: true, Labels: map[string]string{bundle.BackendLabel: "kubevirt"}})
		}
		tw, err = world.Start(ctx, world.Options{Name: "tenant", Nodes: workers, CNIPodSelector: framework.CNISelector})
		Expect(err).NotTo(HaveOccurred())
		framework.DeferCleanupWorld(tw)
		simCtx, stopSim := context.WithCancel(context.Background())
		DeferCleanup(stopSim)
		Expect(tw.StartCloudSimulator(simCtx, mgmt, ns, map[string]string{"k8s-app": "foo-kccm"},
			func(n *corev1.Node) string { return "kubevirt://" + n.Name })).To(Succeed())
		s := scheme.New()
		Expect(seederv1.AddToScheme(s)).To(Succeed())
		mc, err = client.New(mgmt.Config, client.Options{Scheme: s})
		Expect(err).NotTo(HaveOccurred())
		tc, err := framework.Client(tw)
		Expect(err).NotTo(HaveOccurred())
		t = &framework.Tenant{World: tw, Client: tc, Binary: operatorBin}
		kubeconfig, err = os.ReadFile(tw.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())

		By("installing the stand-in Kamaji CRD and starting the seeder in the management world")
		crdPath, err := framework.TestdataDir("kamaji/tenantcontrolplanes.yaml")
		Expect(err).NotTo(HaveOccurred())
		raw, err := os.ReadFile(crdPath)
		Expect(err).NotTo(HaveOccurred())
		crd := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(raw, &crd.Object)).To(Succeed())
		Expect(mc.Create(ctx, crd)).To(Succeed())
		Expect(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		startSeeder(mgmt)

		By("the platform creating the control plane and the TenantSeed")
		url, _, err := framework.PushPackages(ctx, tw)
		Expect(err).NotTo(HaveOccurred())
		tcp := &unstructured.Unstructured{}
		tcp.SetGroupVersionKind(seeder.TenantControlPlaneGVK)
		tcp.SetNamespace(ns)
		tcp.SetName("foo")
		Expect(unstructured.SetNestedField(tcp.Object, map[string]any{"replicas": int64(2)}, "spec", "controlPlane", "deployment")).To(Succeed())
		Expect(mc.Create(ctx, tcp)).To(Succeed())
		tb := framework.Bundle(tw, url)
		tb.Spec.Variant = "auto"
		tb.Spec.Cloud.StorageClasses = map[string]tenantv1.StorageClass{"replicated": {InfraStorageClass: "replicated", Default: true}}
		tb.Spec.Addons = map[string]tenantv1.AddonSpec{"cert-manager-crds": {Enabled: ptr.To(false)}}
		ts := &seederv1.TenantSeed{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "foo"},
			Spec:       seederv1.TenantSeedSpec{Operator: seederv1.OperatorSpec{Version: "v1"}, Bundle: tb.Spec},
		}
		Expect(mc.Create(ctx, ts)).To(Succeed())
	})

	It("seeds only once the control plane is Ready and its admin kubeconfig exists", func(ctx SpecContext) {
		Eventually(seedCondition(ctx, mc, seeder.SeededCondition)).WithContext(ctx).Should(HaveField("Reason", seeder.ReasonControlPlaneNotReady))
		Consistently(func() bool {
			return apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Name: seed.DefaultNamespace}, &corev1.Namespace{}))
		}).WithContext(ctx).Should(BeTrue())

		By("Kamaji reporting the control plane Ready")
		tcp := &unstructured.Unstructured{}
		tcp.SetGroupVersionKind(seeder.TenantControlPlaneGVK)
		Expect(mc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "foo"}, tcp)).To(Succeed())
		Expect(unstructured.SetNestedField(tcp.Object, "Ready", "status", "kubernetesResources", "version", "status")).To(Succeed())
		Expect(unstructured.SetNestedField(tcp.Object, "foo-admin-kubeconfig", "status", "kubeconfig", "admin", "secretName")).To(Succeed())
		Expect(mc.Status().Update(ctx, tcp)).To(Succeed())
		Eventually(seedCondition(ctx, mc, seeder.SeededCondition)).WithContext(ctx).Should(HaveField("Reason", seeder.ReasonKubeconfigMissing))

		By("Kamaji writing the admin kubeconfig")
		Expect(mc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "foo-admin-kubeconfig"},
			Data: map[string][]byte{"super-admin.svc": kubeconfig}})).To(Succeed())
		d := seededDeployment(ctx, t)
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(seed.DefaultImage + ":v1"))

		By("the seed carrying the CRDs, so the TenantBundle is applied without waiting for the operator")
		Eventually(func(g Gomega) {
			c := seedCondition(ctx, mc, seeder.SeededCondition)(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		}).WithContext(ctx).Should(Succeed())
		_, err := t.Bundle(ctx, seed.BundleName)
		Expect(err).NotTo(HaveOccurred())

		By("the operator running from the seeded Deployment (as the kubelet would)")
		operator, err = tw.RunWorkload(ctx, d, world.RunOptions{Binaries: map[string]string{seed.DefaultImage: operatorBin}})
		Expect(err).NotTo(HaveOccurred())
		By("the tenant waiting for the platform's CCM, which the seeder does not install")
		Eventually(func(g Gomega) {
			c := framework.Condition(ctx, t, tenantv1.CloudReadyCondition)(g)
			g.Expect(c.Message).To(ContainSubstring("providerID on nodes"))
			g.Expect(c.Message).To(ContainSubstring("kubevirt-ccm, run by the platform"))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			var ds appsv1.DeploymentList
			g.Expect(mc.List(ctx, &ds, client.InNamespace(ns))).To(Succeed())
			g.Expect(ds.Items).To(BeEmpty(), "something besides the platform placed a workload next to the control plane")
			var releases corev1.SecretList
			g.Expect(mc.List(ctx, &releases, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
			g.Expect(releases.Items).To(BeEmpty(), "the seeder installed a Helm release on the management side")
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("the platform's apps/kubernetes chart running the KubeVirt CCM (<cluster>-kccm) next to the control plane")
		Expect(mc.Create(ctx, platformCCM(ns, "foo"))).To(Succeed())
		framework.ExpectReady(ctx, t)
		b, err := t.Bundle(ctx, seed.BundleName)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Status.Variant).To(Equal("kubevirt"))
		Expect(conditions.IsTrue(b, tenantv1.CloudReadyCondition)).To(BeTrue())

		By("the management side showing the tenant's status")
		Eventually(func(g Gomega) {
			ts := getSeed(ctx, mc)
			g.Expect(conditions.IsReady(ts)).To(BeTrue(), "%v", conditions.Get(ts, seeder.ReadyCondition))
			g.Expect(ts.Status.SeededVersion).To(Equal("v1"))
			g.Expect(ts.Status.TenantConditions).To(ContainElement(And(HaveField("Type", tenantv1.NetworkReadyCondition), HaveField("Status", metav1.ConditionTrue))))
		}).WithContext(ctx).Should(Succeed())
	})

	It("writes no management credential into the tenant", func(ctx SpecContext) {
		secret := &corev1.Secret{}
		Expect(mc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "foo-admin-kubeconfig"}, secret)).To(Succeed())
		var secrets corev1.SecretList
		Expect(t.Client.List(ctx, &secrets)).To(Succeed())
		for _, s := range secrets.Items {
			for k, v := range s.Data {
				Expect(string(v)).NotTo(ContainSubstring(string(secret.Data["super-admin.svc"])), "%s/%s key %s", s.Namespace, s.Name, k)
			}
		}
		var cms corev1.ConfigMapList
		Expect(t.Client.List(ctx, &cms)).To(Succeed())
		for _, cm := range cms.Items {
			for _, v := range cm.Data {
				Expect(v).NotTo(ContainSubstring("client-key-data"), "%s/%s", cm.Namespace, cm.Name)
			}
		}
		d := seededDeployment(ctx, t)
		for _, v := range d.Spec.Template.Spec.Volumes {
			Expect(v.Secret).To(BeNil(), "the seeded operator mounts no Secret")
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			Expect(e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil).To(BeTrue(), "env %s comes from a Secret", e.Name)
		}
	})

	It("converges an addon the management side switches on", func(ctx SpecContext) {
		ts := getSeed(ctx, mc)
		patch := client.MergeFrom(ts.DeepCopy())
		ts.Spec.Bundle.Addons["cert-manager-crds"] = tenantv1.AddonSpec{Enabled: ptr.To(true)}
		Expect(mc.Patch(ctx, ts, patch)).To(Succeed())
		Eventually(func() error {
			return t.Client.Get(ctx, client.ObjectKey{Name: "addon.cert-manager-crds"}, &cozyv1.Package{})
		}).WithContext(ctx).Should(Succeed())
	})

	It("keeps a tenant admin's toggle, and upgrades the operator, when re-seeded with a new version", func(ctx SpecContext) {
		out, err := exec.CommandContext(ctx, cliBin, "--kubeconfig", tw.Kubeconfig, "addons", "disable", "cert-manager-crds").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Eventually(func() bool {
			return apierrors.IsNotFound(t.Client.Get(ctx, client.ObjectKey{Name: "addon.cert-manager-crds"}, &cozyv1.Package{}))
		}).WithContext(ctx).Should(BeTrue())
		before, err := framework.ReleaseHistory(ctx, t.Client)
		Expect(err).NotTo(HaveOccurred())

		By("an operator of another version having applied its own TenantBundle CRD")
		shipped := crdAnnotation(ctx, t)
		other := &unstructured.Unstructured{}
		other.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		other.SetName(tenantBundleCRD)
		other.SetAnnotations(map[string]string{generatorAnnotation: "vnext"})
		Expect(t.Client.Patch(ctx, other, client.Apply, client.FieldOwner("other-operator"), client.ForceOwnership)).To(Succeed())

		ts := getSeed(ctx, mc)
		patch := client.MergeFrom(ts.DeepCopy())
		ts.Spec.Operator.Version = "v2"
		Expect(mc.Patch(ctx, ts, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getSeed(ctx, mc).Status.SeededVersion).To(Equal("v2"))
		}).WithContext(ctx).Should(Succeed())
		d := seededDeployment(ctx, t)
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(seed.DefaultImage + ":v2"))
		b, err := t.Bundle(ctx, seed.BundleName)
		Expect(err).NotTo(HaveOccurred())
		Expect(*b.Spec.Addons["cert-manager-crds"].Enabled).To(BeFalse(), "the re-seed undid the tenant admin's toggle")
		Expect(crdAnnotation(ctx, t)).To(Equal("vnext"), "the re-seed patched a CRD it had created: the seed's CRDs are create-only")

		By("the new operator pod replacing the old one (Recreate) and finding everything in place")
		// As the kubelet ends a pod: SIGTERM, so its lease is handed over.
		Expect(operator.Stop()).To(Succeed())
		operator, err = tw.RunWorkload(ctx, d, world.RunOptions{Binaries: map[string]string{seed.DefaultImage: operatorBin}})
		Expect(err).NotTo(HaveOccurred())
		// The old operator's Ready proves nothing about the new one.
		framework.RequestReconcile(ctx, t, "after-reseed")
		framework.ExpectReady(ctx, t)
		after, err := framework.ReleaseHistory(ctx, t.Client)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(before), "the upgrade reinstalled or upgraded a running component")
		Expect(crdAnnotation(ctx, t)).To(Equal(shipped), "the operator re-applies its own CRDs at start")
	})

	It("keeps working while the tenant API is unreachable", func(ctx SpecContext) {
		secret := &corev1.Secret{}
		Expect(mc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "foo-admin-kubeconfig"}, secret)).To(Succeed())
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Data["super-admin.svc"] = []byte(strings.ReplaceAll(string(kubeconfig), tw.Config.Host, "https://127.0.0.1:1"))
		Expect(mc.Patch(ctx, secret, patch)).To(Succeed())
		Eventually(seedCondition(ctx, mc, seeder.TenantReachableCondition)).WithContext(ctx).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", seeder.ReasonUnreachable)))
		Expect(seederExited()).To(BeFalse())

		patch = client.MergeFrom(secret.DeepCopy())
		secret.Data["super-admin.svc"] = kubeconfig
		Expect(mc.Patch(ctx, secret, patch)).To(Succeed())
		Eventually(seedCondition(ctx, mc, seeder.TenantReachableCondition)).WithContext(ctx).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("ends the seeding when the control plane is deleted, without hanging", func(ctx SpecContext) {
		tcp := &unstructured.Unstructured{}
		tcp.SetGroupVersionKind(seeder.TenantControlPlaneGVK)
		tcp.SetNamespace(ns)
		tcp.SetName("foo")
		Expect(mc.Delete(ctx, tcp)).To(Succeed())
		Eventually(seedCondition(ctx, mc, seeder.SeededCondition)).WithContext(ctx).Should(HaveField("Reason", seeder.ReasonControlPlaneNotFound))
		ts := getSeed(ctx, mc)
		Expect(ts.Finalizers).To(BeEmpty())
		Expect(mc.Delete(ctx, ts)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(mc.Get(ctx, client.ObjectKeyFromObject(ts), &seederv1.TenantSeed{}))
		}).WithContext(ctx).Should(BeTrue())
		Expect(seederExited()).To(BeFalse())
	})
})

var seederCmd *exec.Cmd

// platformCCM is the KubeVirt CCM as Cozystack's apps/kubernetes chart
// renders it beside the control plane (templates/kccm/manager.yaml): the
// Deployment <cluster>-kccm, labelled k8s-app: <cluster>-kccm, mounting the
// tenant's admin kubeconfig.
func platformCCM(ns, cluster string) *appsv1.Deployment {
	labels := map[string]string{"k8s-app": cluster + "-kccm"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-kccm", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "kubevirt-cloud-controller-manager", Image: "kubevirt-cloud-controller-manager",
						VolumeMounts: []corev1.VolumeMount{{Name: "kubeconfig", MountPath: "/etc/kubernetes/kubeconfig", ReadOnly: true}}}},
					Volumes: []corev1.Volume{{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{
						Secret: &corev1.SecretVolumeSource{SecretName: cluster + "-admin-kubeconfig"}}}},
				},
			},
		},
	}
}

// startSeeder runs cmd/tenant-seeder against the management world until
// the suite ends; its log is kept with the world's logs.
func startSeeder(mgmt *world.World) {
	ctx, cancel := context.WithCancel(context.Background())
	log, err := os.Create(filepath.Join(mgmt.Dir, "tenant-seeder.log"))
	Expect(err).NotTo(HaveOccurred())
	seederCmd = exec.CommandContext(ctx, seederBin, "--status-interval=1s", "--zap-log-level=debug")
	seederCmd.Env = append(os.Environ(), "KUBECONFIG="+mgmt.Kubeconfig)
	seederCmd.Stdout, seederCmd.Stderr = log, log
	Expect(seederCmd.Start()).To(Succeed())
	done := make(chan struct{})
	go func() { _ = seederCmd.Wait(); close(done) }()
	seederDone = done
	DeferCleanup(func() {
		cancel()
		<-done
		_ = log.Close()
	})
}

var seederDone <-chan struct{}

func seederExited() bool {
	select {
	case <-seederDone:
		return true
	default:
		return false
	}
}

func getSeed(ctx context.Context, mc client.Client) *seederv1.TenantSeed {
	ts := &seederv1.TenantSeed{}
	ExpectWithOffset(1, mc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "foo"}, ts)).To(Succeed())
	return ts
}

const (
	tenantBundleCRD     = "tenantbundles.tenant.cozystack.io"
	generatorAnnotation = "controller-gen.kubebuilder.io/version"
)

// crdAnnotation reads a field of the TenantBundle CRD that the seed and the
// operator both set.
func crdAnnotation(ctx context.Context, t *framework.Tenant) string {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(t.Client.Get(ctx, client.ObjectKey{Name: tenantBundleCRD}, crd)).To(Succeed())
	return crd.Annotations[generatorAnnotation]
}

func seedCondition(ctx context.Context, mc client.Client, typ string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		ts := &seederv1.TenantSeed{}
		g.Expect(mc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "foo"}, ts)).To(Succeed())
		c := conditions.Get(ts, typ)
		g.Expect(c).NotTo(BeNil())
		return c
	}
}

func seededDeployment(ctx context.Context, t *framework.Tenant) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	EventuallyWithOffset(1, func() error {
		return t.Client.Get(ctx, client.ObjectKey{Namespace: seed.DefaultNamespace, Name: seed.Name}, d)
	}).WithContext(ctx).Should(Succeed())
	return d
}
