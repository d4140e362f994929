package seeding

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/packages"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/seed"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// A tenant whose network tier and addons the management side installed
// (through the admin kubeconfig, releases stored in the tenant under the
// same names and namespaces) switches over to the operator and its Flux.
var _ = Describe("Migrating a tenant the management side provisioned", Ordered, func() {
	var (
		t         *framework.Tenant
		dsUID     string
		crdUID    string
		vsnapCRD  = "volumesnapshots.snapshot.storage.k8s.io"
		managedBy = func(ctx context.Context, c *helm.Client, ns, name string, values map[string]any) {
			dir, err := packages.CozystackDir()
			Expect(err).NotTo(HaveOccurred())
			ch, err := helm.BuildFromTree(helm.TreeChart{Tree: os.DirFS(dir), Path: "system/" + name})
			Expect(err).NotTo(HaveOccurred())
			_, err = c.Install(ctx, helm.Request{Namespace: ns, Name: name, Chart: ch, Values: values})
			Expect(err).NotTo(HaveOccurred())
		}
	)

	BeforeAll(func(ctx SpecContext) {
		w, err := world.Start(ctx, world.Options{Name: "migrate",
			Nodes:          []world.NodeSpec{{Name: "worker-1"}, {Name: "worker-2"}, {Name: "worker-3"}},
			CNIPodSelector: framework.CNISelector})
		Expect(err).NotTo(HaveOccurred())
		framework.DeferCleanupWorld(w)

		By("the management side installing Cilium and the snapshot CRDs the old way")
		hc, err := helm.New(w.Config)
		Expect(err).NotTo(HaveOccurred())
		// Cilium with the values apps/kubernetes passes (defaultCiliumValues).
		managedBy(ctx, hc, "cozy-cilium", "cilium", map[string]any{"cilium": map[string]any{
			"k8sServiceHost": w.APIHost, "k8sServicePort": w.APIPort, "routingMode": "tunnel", "MTU": 1350,
			"enableIPv4Masquerade": true, "ipv4NativeRoutingCIDR": ""}})
		managedBy(ctx, hc, "cozy-vsnap-crd", "vsnap-crd", map[string]any{})
		c, err := framework.Client(w)
		Expect(err).NotTo(HaveOccurred())
		ds := &appsv1.DaemonSet{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "cozy-cilium", Name: "cilium"}, ds)).To(Succeed())
		dsUID = string(ds.UID)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(c.Get(ctx, client.ObjectKey{Name: vsnapCRD}, crd)).To(Succeed())
		crdUID = string(crd.UID)

		By("seeding with `kubectl tenant seed`, the operator started from the Deployment it applied")
		url, _, err := framework.PushPackages(ctx, w)
		Expect(err).NotTo(HaveOccurred())
		raw, err := yaml.Marshal(framework.Bundle(w, url))
		Expect(err).NotTo(HaveOccurred())
		bundleFile := filepath.Join(GinkgoT().TempDir(), "tenantbundle.yaml")
		Expect(os.WriteFile(bundleFile, raw, 0o600)).To(Succeed())
		args := []string{"--kubeconfig", w.Kubeconfig, "seed", "--api-endpoint", fmt.Sprintf("%s:%d", w.APIHost, w.APIPort),
			"--version", "dev", "--bundle-file", bundleFile}
		out, err := exec.CommandContext(ctx, cliBin, append(args, "--dry-run", "-o", "yaml")...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(And(ContainSubstring("kind: Deployment"), ContainSubstring("name: tenantbundles.tenant.cozystack.io")))
		Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: seed.DefaultNamespace}, &corev1.Namespace{}))).To(BeTrue(), "--dry-run applied something")
		// The seed carries the CRDs: the CLI applies the TenantBundle and
		// returns before any operator runs.
		out, err = exec.CommandContext(ctx, cliBin, args...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		t = &framework.Tenant{World: w, Client: c, Binary: operatorBin}
		_, err = t.Bundle(ctx, seed.BundleName)
		Expect(err).NotTo(HaveOccurred())
		d := seededDeployment(ctx, t)
		t.Operator, err = w.RunWorkload(ctx, d, world.RunOptions{Binaries: map[string]string{seed.DefaultImage: operatorBin}})
		Expect(err).NotTo(HaveOccurred())
		_, err = t.RunFlux(ctx)
		Expect(err).NotTo(HaveOccurred())
	})

	It("adopts the releases in place: upgraded, never reinstalled, the same objects", func(ctx SpecContext) {
		framework.ExpectReady(ctx, t)
		Eventually(func(g Gomega) {
			c := framework.Condition(ctx, t, tenantv1.AddonsReadyCondition)(g)
			g.Expect(string(c.Status)).To(Equal("True"), c.Message)
		}).WithContext(ctx).Should(Succeed())

		hist, err := framework.ReleaseHistory(ctx, t.Client)
		Expect(err).NotTo(HaveOccurred())
		for _, release := range []string{"cozy-cilium/cilium", "cozy-vsnap-crd/vsnap-crd"} {
			var versions []int
			for _, r := range hist {
				if r.Release != release {
					continue
				}
				versions = append(versions, r.Version)
				Expect(r.Status).To(BeElementOf("superseded", "deployed"), "%s v%d", release, r.Version)
			}
			Expect(versions).To(ContainElement(1), "%s: the management side's revision is kept as history", release)
			Expect(len(versions)).To(BeNumerically(">=", 2), "%s: taken over by an upgrade", release)
		}
		ds := &appsv1.DaemonSet{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Namespace: "cozy-cilium", Name: "cilium"}, ds)).To(Succeed())
		Expect(string(ds.UID)).To(Equal(dsUID), "Cilium's DaemonSet was recreated")
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(t.Client.Get(ctx, client.ObjectKey{Name: vsnapCRD}, crd)).To(Succeed())
		Expect(string(crd.UID)).To(Equal(crdUID), "the snapshot CRD was recreated")
	})
})
