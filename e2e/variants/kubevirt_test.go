package variants

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

var _ = Describe("A KubeVirt tenant", Ordered, func() {
	var (
		mgmt, w *world.World
		t       *framework.Tenant
		bundle  *tenantv1.TenantBundle
	)

	BeforeAll(func(ctx SpecContext) {
		// The KubeVirt CCM is the platform's: apps/kubernetes runs it next to
		// the control plane as <cluster>-kccm, and the cloud simulator of the
		// tenant follows its pod there.
		mgmt = startWorld(ctx, world.Options{Name: "kv-mgmt", Nodes: []world.NodeSpec{{Name: "mgmt-1"}}})
		w = startWorld(ctx, world.Options{Name: "kubevirt", CNIPodSelector: framework.CNISelector,
			Nodes: nodes("kubevirt", true, "kv-1", "kv-2", "kv-3")})
		Expect(w.StartCloudSimulator(background(), mgmt, "tenant-demo", map[string]string{"k8s-app": "demo-kccm"},
			func(n *corev1.Node) string { return "kubevirt://" + n.Name })).To(Succeed())
		url, _, err := framework.PushPackages(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		t = startTenant(ctx, w)
		bundle = framework.Bundle(w, url)
		bundle.Spec.Variant = "auto"
		bundle.Spec.Cloud.StorageClasses = map[string]tenantv1.StorageClass{
			"replicated": {InfraStorageClass: "replicated", Default: true},
			"local":      {InfraStorageClass: "local"},
		}
		Expect(t.ApplyBundle(ctx, bundle)).To(Succeed())
	})

	It("detects the variant from the nodes and says what it waits for from the platform", func(ctx SpecContext) {
		Eventually(condition(ctx, t, tenantv1.VariantResolvedCondition)).WithContext(ctx).Should(And(
			ready(metav1.ConditionTrue), HaveField("Message", ContainSubstring("kubevirt"))))
		Eventually(condition(ctx, t, tenantv1.CloudReadyCondition)).WithContext(ctx).Should(And(
			ready(metav1.ConditionFalse),
			HaveField("Message", ContainSubstring("providerID on nodes kv-1, kv-2, kv-3 (from kubevirt-ccm, run by the platform)"))))
		b, err := t.Bundle(ctx, "tenant")
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Status.Variant).To(Equal("kubevirt"))
	})

	It("becomes Ready once the platform's CCM initialises the nodes", func(ctx SpecContext) {
		ccm := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "demo-kccm", Namespace: "tenant-demo", Labels: map[string]string{"k8s-app": "demo-kccm"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ccm", Image: "kubevirt-ccm"}}},
		}
		mc, err := framework.Client(mgmt)
		Expect(err).NotTo(HaveOccurred())
		Expect(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-demo"}})).To(Succeed())
		Expect(mc.Create(ctx, ccm)).To(Succeed())
		expectReady(ctx, t)

		var ds appsv1.DaemonSet
		Expect(t.Client.Get(ctx, types.NamespacedName{Namespace: "cozy-csi", Name: "kubevirt-csi-node"}, &ds)).To(Succeed())
		Expect(ds.Status.NumberReady).To(BeEquivalentTo(3))
		var driver storagev1.CSIDriver
		Expect(t.Client.Get(ctx, types.NamespacedName{Name: "csi.kubevirt.io"}, &driver)).To(Succeed())
		var scs storagev1.StorageClassList
		Expect(t.Client.List(ctx, &scs)).To(Succeed())
		params := map[string]string{}
		for _, sc := range scs.Items {
			Expect(sc.Provisioner).To(Equal("csi.kubevirt.io"))
			params[sc.Name] = sc.Parameters["infraStorageClassName"]
		}
		Expect(params).To(Equal(map[string]string{"replicated": "replicated", "local": "local"}))
	})

	It("installs nothing placed on the management side and no infrastructure credential", func(ctx SpecContext) {
		Expect(releases(ctx, t)).To(ConsistOf("cozy-cilium/cilium", "kube-system/coredns", "cozy-vsnap-crd/vsnap-crd", "cozy-csi/csi"))
		var deps appsv1.DeploymentList
		Expect(t.Client.List(ctx, &deps)).To(Succeed())
		for _, d := range deps.Items {
			Expect(d.Name).NotTo(ContainSubstring("ccm"))
			Expect(d.Name).NotTo(ContainSubstring("csi-controller"))
		}
		var secrets corev1.SecretList
		Expect(t.Client.List(ctx, &secrets)).To(Succeed())
		for _, s := range secrets.Items {
			Expect(s.Name).NotTo(ContainSubstring("kubeconfig"), "secret %s/%s", s.Namespace, s.Name)
			for k := range s.Data {
				Expect(k).NotTo(Equal("super-admin.svc"))
			}
		}
	})

	It("refuses a spec.variant that contradicts the nodes, and a change of backend, removing nothing", func(ctx SpecContext) {
		before := releases(ctx, t)
		contradicting := bundle.DeepCopy()
		contradicting.Spec.Variant = "openstack"
		Expect(t.ApplyBundle(ctx, contradicting)).To(Succeed())
		Eventually(condition(ctx, t, tenantv1.StalledCondition)).WithContext(ctx).Should(And(
			ready(metav1.ConditionTrue), HaveField("Reason", Equal(tenantv1.ReasonVariantMismatch)),
			HaveField("Message", And(ContainSubstring(`"openstack"`), ContainSubstring(`"kubevirt"`)))))
		Expect(releases(ctx, t)).To(Equal(before))
		Expect(t.ApplyBundle(ctx, bundle)).To(Succeed())
		expectReady(ctx, t)

		By("the node groups move to another backend while KubeVirt is installed")
		relabel(ctx, t.Client, "openstack")
		Eventually(condition(ctx, t, tenantv1.StalledCondition)).WithContext(ctx).Should(And(
			ready(metav1.ConditionTrue), HaveField("Reason", Equal(tenantv1.ReasonBackendChange))))
		Expect(releases(ctx, t)).To(Equal(before))
		var ds appsv1.DaemonSet
		Expect(t.Client.Get(ctx, types.NamespacedName{Namespace: "cozy-csi", Name: "kubevirt-csi-node"}, &ds)).To(Succeed())
		relabel(ctx, t.Client, "kubevirt")
		expectReady(ctx, t)
	})

	It("installs the snapshot CRDs before the CSI node plugin, whose VolumeSnapshotClass needs them, whatever the addon choices", func(ctx SpecContext) {
		// system/kubevirt-csi-node renders its VolumeSnapshotClass without
		// a capabilities guard: installed before the CRDs, it fails with
		// "no matches for kind VolumeSnapshotClass".
		class := &unstructured.Unstructured{}
		class.SetAPIVersion("snapshot.storage.k8s.io/v1")
		class.SetKind("VolumeSnapshotClass")
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "kubevirt-snapshots"}, class)).To(Succeed())
		Expect(class.Object).To(HaveKeyWithValue("driver", "csi.kubevirt.io"))
		history, err := framework.ReleaseHistory(ctx, t.Client)
		Expect(err).NotTo(HaveOccurred())
		Expect(history).To(ContainElement(framework.Revision{Release: "cozy-csi/csi", Version: 1, Status: "deployed"}))
		Expect(history).NotTo(ContainElement(HaveField("Status", "failed")), "a release needed more than one attempt: %v", history)
	})

	It("turns the Gateway API on in a running cluster: its CRDs, then Cilium upgraded against the APIs it serves now", func(ctx SpecContext) {
		// Cilium's chart adds its GatewayClass only where the Gateway API is
		// served (gatewayAPI.gatewayClass.create: auto), which it was not at
		// the install: the upgrade must render against today's APIs.
		class := &unstructured.Unstructured{}
		class.SetAPIVersion("gateway.networking.k8s.io/v1")
		class.SetKind("GatewayClass")
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "cilium"}, class)).To(
			MatchError(ContainSubstring("no matches for kind")))

		By("spec.cluster.gatewayAPI on, and a new StorageClass for the CSI release in the same change")
		changed := bundle.DeepCopy()
		changed.Spec.Cluster.GatewayAPI = true
		changed.Spec.Cloud.StorageClasses["fast"] = tenantv1.StorageClass{InfraStorageClass: "nvme"}
		Expect(t.ApplyBundle(ctx, changed)).To(Succeed())
		expectReady(ctx, t)
		Expect(releases(ctx, t)).To(ContainElement("kube-system/gateway-api-crds"))
		var fast storagev1.StorageClass
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "fast"}, &fast)).To(Succeed())
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: "cilium"}, class)).To(Succeed())
		Expect(class.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("controllerName", "io.cilium/gateway-controller")))
		var ciliumConfig corev1.ConfigMap
		Expect(t.Client.Get(ctx, types.NamespacedName{Namespace: "cozy-cilium", Name: "cilium-config"}, &ciliumConfig)).To(Succeed())
		Expect(ciliumConfig.Data).To(HaveKeyWithValue("enable-gateway-api", "true"))
		var envoy appsv1.DaemonSet
		Expect(t.Client.Get(ctx, types.NamespacedName{Namespace: "cozy-cilium", Name: "cilium-envoy"}, &envoy)).To(Succeed())
	})
})

func relabel(ctx SpecContext, c client.Client, backend string) {
	var list corev1.NodeList
	Expect(c.List(ctx, &list)).To(Succeed())
	for i := range list.Items {
		n := &list.Items[i]
		patch := client.MergeFrom(n.DeepCopy())
		n.Labels["node.cluster.x-k8s.io/backend"] = backend
		Expect(c.Patch(ctx, n, patch)).To(Succeed())
	}
}
