// tenant-seeder runs in the management cluster: it seeds every tenant whose
// Kamaji control plane is Ready with the tenant operator and its
// TenantBundle, and reads the tenant's status back. Wiring only; the
// controller is operator/seeder.
package main

import (
	"context"
	"flag"
	"os"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/scheme"
	"github.com/cozystack/tenant-operator/manifests"
	seederv1 "github.com/cozystack/tenant-operator/operator/apis/seeder/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/seeder"
)

func main() {
	var (
		metricsAddr, leaderNS string
		leaderElect           bool
		statusInterval        time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "metrics address; 0 disables")
	flag.BoolVar(&leaderElect, "leader-elect", false, "use a Lease so that only one instance acts")
	flag.StringVar(&leaderNS, "leader-election-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the Lease")
	flag.DurationVar(&statusInterval, "status-interval", 30*time.Second, "how often a seeded tenant's status is read back")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(ctrl.SetupSignalHandler(), metricsAddr, leaderNS, leaderElect, statusInterval); err != nil {
		ctrl.Log.Error(err, "exiting")
		os.Exit(1)
	}
}

func run(ctx context.Context, metricsAddr, leaderNS string, leaderElect bool, statusInterval time.Duration) error {
	s := scheme.New()
	utilruntime.Must(seederv1.AddToScheme(s))
	cfg := ctrl.GetConfigOrDie()
	direct, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	crds, err := apply.ReadManifests(manifests.SeederCRDs, "seeder-crds/*.yaml")
	if err != nil {
		return err
	}
	if _, err := apply.NewFor(direct, "tenant-seeder").ApplyStaged(ctx, crds, 2*time.Minute); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  s,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		LeaderElection:          leaderElect,
		LeaderElectionID:        "tenant-seeder.seeder.tenant.cozystack.io",
		LeaderElectionNamespace: leaderNS,
		Client:                  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return err
	}
	if err := (&seeder.Reconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Tenants:        &seeder.TenantClients{Scheme: s},
		StatusInterval: statusInterval,
		Events:         mgr.GetEventRecorder("tenant-seeder"),
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
