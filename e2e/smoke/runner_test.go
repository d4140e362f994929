package smoke

import (
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/tenant-operator/e2e/world"
)

const whoamiImage = "ghcr.io/cozystack/whoami"

// whoamiDeployment is shaped like our operator's Deployment: hostNetwork,
// the API endpoint named explicitly, downward-API and ConfigMap env, and an
// emptyDir whose path the runner must map.
func whoamiDeployment(ns string, args ...string) *appsv1.Deployment {
	spec := podSpec(whoamiImage+":dev@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", true, bootTolerations)
	spec.ServiceAccountName = "whoami"
	spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &spec.Containers[0]
	c.Command = []string{"/usr/local/bin/whoami"}
	c.Args = args
	c.VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/var/cache/whoami"}}
	c.Env = []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: w.APIHost},
		{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(w.APIPort)},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "whoami"}, Key: "greeting"}}},
		{Name: "CACHE_DIR", Value: "/var/cache/whoami"},
	}
	return deployment(ns, "whoami", 1, spec, nil)
}

func readLog(p *world.Proc) string {
	data, err := os.ReadFile(p.LogPath())
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

var _ = Describe("The process runner", func() {
	const ns = "runner"
	binaries := func() world.RunOptions {
		return world.RunOptions{Binaries: map[string]string{whoamiImage: whoamiBin}}
	}

	BeforeEach(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		for _, obj := range []*corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "whoami"}}} {
			Expect(ignoreAlreadyExists(k.Create(ctx, obj))).To(Succeed())
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "whoami"}, Data: map[string]string{"greeting": "hello"}}
		Expect(ignoreAlreadyExists(k.Create(ctx, cm))).To(Succeed())
	})

	It("runs a container with its ServiceAccount's credentials and its resolved env", func(ctx SpecContext) {
		wl, err := w.RunWorkload(ctx, whoamiDeployment(ns, "--out=/var/cache/whoami/user.txt"), binaries())
		Expect(err).NotTo(HaveOccurred())
		Expect(wl.Procs).To(HaveLen(1))
		p := wl.Procs[0]
		code, err := p.Wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		log := readLog(p)
		Expect(code).To(Equal(0), log)

		Expect(log).To(ContainSubstring("username=system:serviceaccount:runner:whoami\n"))
		Expect(log).To(ContainSubstring("server=https://127.0.0.1:" + strconv.Itoa(w.APIPort) + "\n"))
		Expect(log).To(MatchRegexp(`env POD_NAME=whoami-\w{5}\n`))
		Expect(log).To(ContainSubstring("env POD_NAMESPACE=runner\n"))
		Expect(log).To(ContainSubstring("env NODE_NAME=smoke-1\n"))
		Expect(log).To(ContainSubstring("env GREETING=hello\n"))
		Expect(log).NotTo(ContainSubstring("/var/cache/whoami"), "the emptyDir path is mapped to a local directory")
		wrote := ""
		for _, line := range strings.Split(log, "\n") {
			if v, ok := strings.CutPrefix(line, "wrote="); ok {
				wrote = v
			}
		}
		Expect(wrote).To(HavePrefix(w.Dir))
		Expect(os.ReadFile(wrote)).To(BeEquivalentTo("system:serviceaccount:runner:whoami\n"))
	})

	It("reports a kill -9 and restarts the process with a fresh token", func(ctx SpecContext) {
		wl, err := w.RunWorkload(ctx, whoamiDeployment(ns, "--serve"), binaries())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(wl.Stop)
		p := wl.Procs[0]
		Eventually(func() string { return readLog(p) }).WithContext(ctx).Should(ContainSubstring("serving\n"))
		_, exited := p.ExitCode()
		Expect(exited).To(BeFalse())

		Expect(p.Kill()).To(Succeed())
		code, exited := p.ExitCode()
		Expect(exited).To(BeTrue())
		Expect(code).To(Equal(137), "128+SIGKILL, as a container runtime reports it")

		firstPID := p.PID()
		Expect(p.Restart(ctx)).To(Succeed())
		Expect(p.PID()).NotTo(Equal(firstPID))
		Eventually(func() int { return strings.Count(readLog(p), "serving\n") }).WithContext(ctx).Should(Equal(2))
		_, exited = p.ExitCode()
		Expect(exited).To(BeFalse())

		Expect(wl.Stop()).To(Succeed())
		code, exited = p.ExitCode()
		Expect(exited).To(BeTrue())
		Expect(code).To(Equal(0), "whoami exits cleanly on SIGTERM")
		Expect(readLog(p)).To(ContainSubstring("terminating\n"))
	}, SpecTimeout(time.Minute))

	It("refuses what a kubelet would refuse, and what the runner cannot map", func(ctx SpecContext) {
		noSA := whoamiDeployment(ns)
		noSA.Spec.Template.Spec.ServiceAccountName = "missing"
		_, err := w.RunWorkload(ctx, noSA, binaries())
		Expect(err).To(MatchError(ContainSubstring("serviceaccount runner/missing")))

		unknownImage := whoamiDeployment(ns)
		unknownImage.Spec.Template.Spec.Containers[0].Image = "registry.example/other:v1"
		_, err = w.RunWorkload(ctx, unknownImage, binaries())
		Expect(err).To(MatchError(ContainSubstring(`no binary for image repository "registry.example/other"`)))

		noEndpoint := whoamiDeployment(ns)
		noEndpoint.Spec.Template.Spec.Containers[0].Env = noEndpoint.Spec.Template.Spec.Containers[0].Env[2:]
		_, err = w.RunWorkload(ctx, noEndpoint, binaries())
		Expect(err).To(MatchError(ContainSubstring("KUBERNETES_SERVICE_HOST")))
	})
})
