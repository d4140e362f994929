package smoke

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/tenant-operator/e2e/world"
)

// alive tells whether a PID still names a process (zombies included, so a
// process that was killed but never reaped counts as left behind).
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

var _ = Describe("Stopping a world", func() {
	It("leaves no process and no directory behind", func(ctx SpecContext) {
		w2, err := world.Start(ctx, world.Options{
			Name:         "smoke-teardown",
			ArtifactsDir: GinkgoT().TempDir(),
			Nodes:        []world.NodeSpec{{Name: "teardown-1"}},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(w2.Stop(false)).To(Succeed()) })

		By("running a workload and Flux in it too")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "serve"},
			Spec:       podSpec(whoamiImage+":dev", true, nil),
		}
		pod.Spec.Containers[0].Args = []string{"--serve"}
		pod.Spec.Containers[0].Env = []corev1.EnvVar{
			{Name: "KUBERNETES_SERVICE_HOST", Value: w2.APIHost},
			{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(w2.APIPort)},
		}
		wl, err := w2.RunWorkload(ctx, pod, world.RunOptions{Binaries: map[string]string{whoamiImage: whoamiBin}})
		Expect(err).NotTo(HaveOccurred())
		Expect(w2.StartFlux(ctx)).To(Succeed())

		pids := w2.PIDs()
		// etcd, apiserver, kcm, scheduler, kwok, registry, two Flux controllers, one workload.
		Expect(pids).To(HaveLen(9))
		Expect(pids).To(ContainElement(wl.Procs[0].PID()))
		for _, pid := range pids {
			Expect(alive(pid)).To(BeTrue(), "pid %d", pid)
		}
		dir := w2.Dir

		Expect(w2.Stop(false)).To(Succeed())
		for _, pid := range pids {
			Expect(alive(pid)).To(BeFalse(), "pid %d survived Stop", pid)
		}
		Expect(dir).NotTo(BeADirectory())
	}, SpecTimeout(3*time.Minute))

	It("cleans up after a start that fails halfway", func(ctx SpecContext) {
		artifacts := GinkgoT().TempDir()
		_, err := world.Start(ctx, world.Options{
			Name:         "smoke-broken",
			ArtifactsDir: artifacts,
			ExtraArgs:    map[string][]string{world.KubeAPIServer: {"--no-such-flag"}},
		})
		var startErr *world.StartError
		Expect(errors.As(err, &startErr)).To(BeTrue(), "got %v", err)
		Expect(startErr.Error()).To(ContainSubstring("kube-apiserver exited"))
		// etcd, the registry and the API server had been started.
		Expect(startErr.PIDs).To(HaveLen(3))
		for _, pid := range startErr.PIDs {
			Expect(alive(pid)).To(BeFalse(), "pid %d survived a failed Start", pid)
		}
		Expect(startErr.Logs).To(HavePrefix(artifacts))
		Expect(os.ReadFile(startErr.Logs + "/kube-apiserver.log")).To(ContainSubstring("no-such-flag"))
	}, SpecTimeout(2*time.Minute))
})
