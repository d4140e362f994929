package smoke

import (
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/tenant-operator/e2e/world"
)

// The fault trials of the bench take the API server and the registry down
// and bring them back; what comes back must be the same cluster and the same
// registry.
var _ = Describe("An outage of a world component", func() {
	It("takes the API server and the registry down and brings them back with their state", func(ctx SpecContext) {
		w2, err := world.Start(ctx, world.Options{Name: "smoke-outage", ArtifactsDir: GinkgoT().TempDir()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(w2.Stop(CurrentSpecReport().Failed())).To(Succeed()) })

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "before-outage"}}
		_, err = w2.Clientset.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, version := pushChartTo(w2.RegistryHost, "smoke-app")
		apiPIDs := len(w2.PIDs())

		By("killing the API server: requests fail")
		Expect(w2.Outage(world.KubeAPIServer)).To(Succeed())
		_, err = w2.Clientset.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		Expect(err).To(HaveOccurred())
		Expect(w2.Resume(ctx, world.KubeAPIServer)).To(Succeed())
		_, err = w2.Clientset.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "etcd kept the object across the outage")
		Expect(w2.PIDs()).To(HaveLen(apiPIDs), "the restarted process replaces the dead one")
		Expect(w2.Resume(ctx, world.KubeAPIServer)).To(MatchError(ContainSubstring("no outage to end")))

		By("killing the registry: /v2/ does not answer until it is back")
		Expect(w2.Outage(world.Registry)).To(Succeed())
		_, err = http.Get("http://" + w2.RegistryHost + "/v2/")
		Expect(err).To(HaveOccurred())
		Expect(w2.Resume(ctx, world.Registry)).To(Succeed())
		resp, err := http.Get("http://" + w2.RegistryHost + "/v2/charts/smoke-app/tags/list")
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(string(body)).To(ContainSubstring(`"`+version+`"`), "the pushed chart survived the outage")

		Expect(w2.Outage(world.Etcd)).To(MatchError(ContainSubstring("not supported")))
	}, SpecTimeout(3*time.Minute))
})
