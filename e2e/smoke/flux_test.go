package smoke

import (
	"context"
	"fmt"
	"os"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pushChart packages testdata/<name> with the Helm SDK and pushes it to the
// world's registry as an OCI Helm chart; it returns the oci:// repository.
func pushChart(name string) (repo, version string) { return pushChartTo(w.RegistryHost, name) }

func pushChartTo(registryHost, name string) (repo, version string) {
	ch, err := loader.LoadDir("testdata/" + name)
	Expect(err).NotTo(HaveOccurred())
	path, err := chartutil.Save(ch, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())

	rc, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(GinkgoWriter))
	Expect(err).NotTo(HaveOccurred())
	repo = fmt.Sprintf("%s/charts/%s", registryHost, name)
	_, err = rc.Push(data, repo+":"+ch.Metadata.Version)
	Expect(err).NotTo(HaveOccurred())
	return "oci://" + repo, ch.Metadata.Version
}

func installChartWithFlux(ctx context.Context, ns string) {
	By("starting source-controller and helm-controller")
	Expect(w.StartFlux(ctx)).To(Succeed())

	By("pushing the chart to the world's registry")
	url, version := pushChart("smoke-app")

	repo := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smoke-app"},
		Spec: sourcev1.OCIRepositorySpec{
			URL:       url,
			Reference: &sourcev1.OCIRepositoryRef{Tag: version},
			LayerSelector: &sourcev1.OCILayerSelector{
				MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
				Operation: sourcev1.OCILayerCopy,
			},
			Insecure: true,
			Interval: metav1.Duration{Duration: time.Minute},
		},
	}
	release := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smoke-app"},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: repo.Name},
			Interval: metav1.Duration{Duration: time.Minute},
			Values:   &apiextensionsv1.JSON{Raw: []byte(`{"replicaCount":2}`)},
		},
	}
	Expect(k.Create(ctx, repo)).To(Succeed())
	Expect(k.Create(ctx, release)).To(Succeed())
	// helm-controller must remove its finalizer before the world stops it.
	DeferCleanup(func() {
		ctx, cancel := cleanupCtx()
		defer cancel()
		Expect(client.IgnoreNotFound(k.Delete(ctx, release))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k.Get(ctx, client.ObjectKeyFromObject(release), &helmv2.HelmRelease{}))
		}).WithContext(ctx).Should(BeTrue())
	})

	By("the HelmRelease becoming Ready with its Deployment available")
	Eventually(func(g Gomega) {
		g.Expect(k.Get(ctx, client.ObjectKeyFromObject(release), release)).To(Succeed())
		ready := apimeta.FindStatusCondition(release.Status.Conditions, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
	d := &appsv1.Deployment{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "smoke-app"}, d)).To(Succeed())
	Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2))

	By("helm-controller uninstalling the release when the HelmRelease is deleted")
	Expect(k.Delete(ctx, release)).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{}))
	}).WithContext(ctx).Should(BeTrue())
}
