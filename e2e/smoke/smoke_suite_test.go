// Package smoke proves the test world: a simulated tenant cluster whose nodes
// stay NotReady until their CNI pod is Ready, whose cloud initialisation waits
// for a CCM pod, that runs real Flux, runs our workloads as processes and
// leaves no process behind.
package smoke

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/tenant-operator/e2e/world"
)

const cniLabelKey, cniLabelValue = "k8s-app", "cilium"

var (
	w *world.World
	// k talks to w with Flux's kinds registered too.
	k client.Client
	// whoamiBin is the process runner's test subject, built once.
	whoamiBin string
	// suiteFailed keeps the world's logs when any spec failed.
	suiteFailed bool
	nodeNames   = []string{"smoke-1", "smoke-2", "smoke-3"}
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	// Every Eventually here passes a spec context; without this Gomega would
	// apply no timeout to them at all.
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "World smoke suite")
}

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		suiteFailed = true
	}
})

var _ = BeforeSuite(func(ctx SpecContext) {
	logf.SetLogger(GinkgoLogr)
	opts := world.Options{
		Name:           "smoke",
		CNIPodSelector: map[string]string{cniLabelKey: cniLabelValue},
	}
	for _, n := range nodeNames {
		opts.Nodes = append(opts.Nodes, world.NodeSpec{Name: n})
	}
	started := time.Now()
	var err error
	w, err = world.Start(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("world %s up in %s, dir %s\n", w.Name, time.Since(started), w.Dir)
	DeferCleanup(func() {
		// KEEP_WORLD=1 keeps the logs of a passing run too.
		keep := suiteFailed || CurrentSpecReport().Failed() || os.Getenv("KEEP_WORLD") != ""
		Expect(w.Stop(keep)).To(Succeed())
	})

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	Expect(sourcev1.AddToScheme(scheme)).To(Succeed())
	Expect(helmv2.AddToScheme(scheme)).To(Succeed())
	k, err = client.New(w.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	whoamiBin = filepath.Join(GinkgoT().TempDir(), "whoami")
	build := exec.CommandContext(ctx, "go", "build", "-o", whoamiBin, "./testdata/whoami")
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed())
}, NodeTimeout(5*time.Minute))

// cleanupCtx is for DeferCleanup bodies, which must not inherit a spec
// context that is already done.
func cleanupCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}
