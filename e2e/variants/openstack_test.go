package variants

import (
	"context"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// sentinel stands for the application credential secret: it must never be
// seen outside the Secret that holds it.
const sentinel = "app-cred-secret-3f9c1d"

var _ = Describe("An OpenStack tenant", Ordered, func() {
	var (
		w        *world.World
		t        *framework.Tenant
		timeline *framework.Timeline
	)

	BeforeAll(func(ctx SpecContext) {
		w = startWorld(ctx, world.Options{Name: "openstack", CNIPodSelector: framework.CNISelector,
			Nodes: nodes("openstack", true, "os-1", "os-2", "os-3")})
		Expect(w.StartCloudSimulator(background(), w, "kube-system", map[string]string{"app": "openstack-cloud-controller-manager"},
			func(*corev1.Node) string { return "openstack:///" + string(uuid.NewUUID()) })).To(Succeed())
		recCtx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		var err error
		timeline, err = framework.RecordTimeline(recCtx, w.Config)
		Expect(err).NotTo(HaveOccurred())
		url, _, err := framework.PushPackages(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		mirror, err := framework.PushOpenStackCharts(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		t = startTenant(ctx, w)

		// The tenant's own application credential, put there by its admin.
		Expect(t.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cloud-config", Namespace: "kube-system"},
			StringData: map[string]string{"cloud.conf": "[Global]\napplication-credential-id=abc\napplication-credential-secret=" + sentinel + "\n"},
		})).To(Succeed())
		b := framework.Bundle(w, url)
		b.Spec.Variant = "auto"
		b.Spec.Cloud.CredentialsSecretRef = &tenantv1.SecretReference{Name: "cloud-config", Namespace: "kube-system"}
		b.Spec.ChartMirrors = map[string]tenantv1.ChartMirror{
			"https://kubernetes.github.io/cloud-provider-openstack": {URL: mirror, Insecure: true},
		}
		Expect(t.ApplyBundle(ctx, b)).To(Succeed())
	})

	It("becomes Ready with the CCM first, the taint lifted by it, and Cinder CSI after the CNI", func(ctx SpecContext) {
		expectReady(ctx, t)
		Expect(releases(ctx, t)).To(ConsistOf("cozy-cilium/cilium", "kube-system/coredns", "cozy-vsnap-crd/vsnap-crd",
			"kube-system/openstack-ccm", "kube-system/cinder-csi"))

		By("cloud-provider-openstack's newest release, 2.36, for Kubernetes 1.37, which has none of its own yet, and the status says so")
		b, err := t.Bundle(ctx, "tenant")
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{"openstack-cloud-controller-manager", "openstack-cinder-csi"} {
			Expect(b.Status.Components).To(ContainElement(And(
				HaveField("Name", name), HaveField("Version", "2.36.0"),
				HaveField("Message", ContainSubstring("matches 2.37.x yet: using 2.36.0")))), name)
		}
		By("the CCM on the workers, although the chart pins it to control-plane nodes, which a hosted control plane does not have")
		var ccm appsv1.DaemonSet
		Expect(t.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "openstack-cloud-controller-manager"}, &ccm)).To(Succeed())
		Expect(ccm.Spec.Template.Spec.NodeSelector).To(BeEmpty())
		Expect(ccm.Status.DesiredNumberScheduled).To(BeEquivalentTo(3))
		Expect(ccm.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.Secret.SecretName", "cloud-config")))

		ciliumReady, ok := timeline.First(func(e framework.Event) bool { return e.Kind == "DaemonSet" && e.Name == "cilium" })
		Expect(ok).To(BeTrue())
		ccmRelease, ok := timeline.First(func(e framework.Event) bool {
			return e.Kind == "Release" && strings.HasPrefix(e.Name, "openstack-ccm ")
		})
		Expect(ok).To(BeTrue())
		Expect(ccmRelease.RV).To(BeNumerically("<", ciliumReady.RV), "the CCM may start before the CNI:\n%s", timeline)
		cinderRelease, ok := timeline.First(func(e framework.Event) bool { return e.Kind == "Release" && strings.HasPrefix(e.Name, "cinder-csi ") })
		Expect(ok).To(BeTrue())
		Expect(cinderRelease.RV).To(BeNumerically(">", ciliumReady.RV), "Cinder CSI starts after the CNI:\n%s", timeline)
		ccmPod, ok := timeline.First(func(e framework.Event) bool {
			return e.Kind == "Pod" && e.Labels["app"] == "openstack-cloud-controller-manager"
		})
		Expect(ok).To(BeTrue())
		for _, e := range timeline.Events() {
			if e.Kind == "Pod" && (e.Labels["k8s-app"] == "kube-dns" || e.Labels["component"] == "controllerplugin") {
				Expect(e.RV).To(BeNumerically(">", ccmPod.RV), "%s Ready before the CCM, through the uninitialized taint:\n%s", e, timeline)
			}
		}
		var list corev1.NodeList
		Expect(t.Client.List(ctx, &list)).To(Succeed())
		for _, n := range list.Items {
			Expect(n.Spec.ProviderID).To(HavePrefix("openstack:///"))
		}
	})

	It("never shows the credential in a status, an event, a log line or a ConfigMap", func(ctx SpecContext) {
		b, err := t.Bundle(ctx, "tenant")
		Expect(err).NotTo(HaveOccurred())
		raw, err := yaml.Marshal(b)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(sentinel))

		var events corev1.EventList
		Expect(t.Client.List(ctx, &events)).To(Succeed())
		raw, err = yaml.Marshal(events)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(sentinel))

		var cms corev1.ConfigMapList
		Expect(t.Client.List(ctx, &cms)).To(Succeed())
		raw, err = yaml.Marshal(cms)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(sentinel))

		log, err := os.ReadFile(t.Operator.Procs[0].LogPath())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).NotTo(BeEmpty())
		Expect(string(log)).NotTo(ContainSubstring(sentinel))

		By("the charts get only the Secret's name")
		var secrets corev1.SecretList
		Expect(t.Client.List(ctx, &secrets, client.InNamespace("kube-system"))).To(Succeed())
		holders := 0
		for _, s := range secrets.Items {
			for _, v := range s.Data {
				if strings.Contains(string(v), sentinel) {
					holders++
				}
			}
		}
		Expect(holders).To(Equal(1), "the credential must not be copied into another Secret")
	})
})
