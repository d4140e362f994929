// Command tenant-operator runs inside a tenant cluster on the host network
// and brings it from "just initialised" to working. main is wiring only.
package main

import (
	"context"
	"flag"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/artifacts"
	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/flux"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/readiness"
	"github.com/cozystack/tenant-operator/internal/scheme"
	"github.com/cozystack/tenant-operator/internal/seed"
	"github.com/cozystack/tenant-operator/internal/source"
	"github.com/cozystack/tenant-operator/internal/watch"
	"github.com/cozystack/tenant-operator/manifests"
	"github.com/cozystack/tenant-operator/operator/addons"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/bootstrap"
	"github.com/cozystack/tenant-operator/operator/catalog"
	"github.com/cozystack/tenant-operator/operator/packages"
	"github.com/cozystack/tenant-operator/operator/tenantbundle"
	"github.com/cozystack/tenant-operator/variants"
)

type options struct {
	metricsAddr, probeAddr           string
	pprofAddr                        string
	leaderElect                      bool
	leaderNamespace, leaderIdentity  string
	lease, renewDeadline, retryEvery time.Duration
	cacheDir                         string
	variantsDir                      string
	crdTimeout                       time.Duration
	progressInterval                 time.Duration
	artifactAddr, artifactURL        string
}

func (o *options) bindFlags(fs *flag.FlagSet) {
	// No port by default: on the host network a surge pod of a rollout
	// would collide with the old one on any fixed port.
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "0", "metrics address (e.g. 127.0.0.1:8080); 0 disables")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", "0", "health probe address; 0 disables")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "net/http/pprof address for profiling (e.g. 127.0.0.1:6060); 0 disables")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "use a Lease so that only one instance acts")
	fs.StringVar(&o.leaderNamespace, "leader-election-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the Lease")
	// The pod name as identity lets a restarted container of the same pod
	// take its Lease back at once instead of waiting for it to expire.
	fs.StringVar(&o.leaderIdentity, "leader-election-identity", os.Getenv("POD_NAME"), "identity in the Lease (default: pod name)")
	// Renewals every 15s keep the idle API load at 4 writes a minute.
	fs.DurationVar(&o.lease, "leader-election-lease-duration", 60*time.Second, "Lease duration")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 45*time.Second, "Lease renew deadline")
	fs.DurationVar(&o.retryEvery, "leader-election-retry-period", 15*time.Second, "Lease retry period")
	fs.StringVar(&o.cacheDir, "cache-dir", "/var/cache/tenant-operator", "where pulled artifacts are kept, by digest")
	fs.StringVar(&o.variantsDir, "variants-dir", "", "a folder of extra variants (<name>/variant.yaml) besides the built-in ones")
	fs.StringVar(&o.artifactAddr, "artifact-bind-address", "127.0.0.1:9795", "where helm-controller downloads the chart artifacts of addons and packages (the node's address when Flux may run on another node)")
	fs.StringVar(&o.artifactURL, "artifact-advertise-url", "", "base URL of the artifact server as Flux sees it (default http://<artifact-bind-address>)")
	fs.DurationVar(&o.progressInterval, "progress-report-interval", time.Second, "least time between two TenantBundle status writes that only report a bootstrap's progress (errors, Stalled, Ready and a new generation are written at once); 0 writes each at once")
	fs.DurationVar(&o.crdTimeout, "crd-timeout", 2*time.Minute, "how long to wait for our CRDs to be established at start")
}

// watchListGate is client-go's switch between streaming lists (a watch
// that ends its initial events with a bookmark) and LIST+WATCH.
const watchListGate = "KUBE_FEATURE_WatchListClient"

func main() {
	// The operator's caches start right after it creates its CRDs on a
	// fresh cluster, and the API server holds the end-of-initial-events
	// bookmark of a just-created resource for about a second: measured,
	// that second sat on the bootstrap's critical path. Its caches are a
	// few small, label-filtered lists, so streaming saves nothing. An
	// explicit setting still wins.
	if _, set := os.LookupEnv(watchListGate); !set {
		_ = os.Setenv(watchListGate, "false")
	}
	var opts options
	opts.bindFlags(flag.CommandLine)
	// Timestamps to the nanosecond: a bootstrap step takes milliseconds,
	// and the logs are read next to the API server's audit log.
	zapOpts := zap.Options{TimeEncoder: zapcore.RFC3339NanoTimeEncoder}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	if opts.leaderElect && (opts.leaderNamespace == "" || opts.leaderIdentity == "") {
		log.Error(nil, "leader election needs --leader-election-namespace and --leader-election-identity (or POD_NAMESPACE and POD_NAME)")
		os.Exit(1)
	}
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		log.Error(err, "exiting")
		os.Exit(1)
	}
}

func run(ctx context.Context, opts options) error {
	cfg := ctrl.GetConfigOrDie()
	scheme := scheme.New()
	// One REST mapper for the direct client and the manager: each would
	// otherwise read the API server's discovery on its own, the manager's
	// read sitting between the CRD check and its caches' first lists.
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return err
	}
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return err
	}
	applier := apply.New(direct)
	// One puller: addons reuse the artifact the bootstrap pulled, and the
	// bootstrap what the prefetch pulled while the manager starts.
	variantFS := []fs.FS{variants.FS}
	if opts.variantsDir != "" {
		variantFS = append(variantFS, os.DirFS(opts.variantsDir))
	}
	loaded, err := bundle.LoadVariants(variantFS...)
	if err != nil {
		return err
	}
	hot, err := bundle.TreePaths(bundles.FS, loaded)
	if err != nil {
		return err
	}
	platform, err := bundle.PlatformNamespaces(bundles.FS, loaded)
	if err != nil {
		return err
	}
	platformNamespaces := sets.New(platform...).Insert(flux.Namespace)
	if opts.leaderNamespace != "" {
		platformNamespaces.Insert(opts.leaderNamespace)
	}
	bootstrapReleases, err := bundle.BootstrapReleases(bundles.FS, loaded)
	if err != nil {
		return err
	}
	puller := &source.Puller{CacheDir: opts.cacheDir, Hot: bundle.Under(hot), Log: ctrl.Log.WithName("source")}
	go tenantbundle.Prefetch(ctx, direct, puller)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	probe := dc.RESTClient()
	packageCRDs, err := installCRDs(ctx, applier, probe, opts.crdTimeout)
	if err != nil {
		return err
	}

	// Helm-managed workloads (components, addons) and Flux, which the
	// operator applies itself.
	managed, err := labels.Parse(helm.ManagedByLabel + " in (Helm," + apply.FieldOwner + ")")
	if err != nil {
		return err
	}
	byObject := map[client.Object]cache.ByObject{}
	for _, obj := range readiness.WorkloadTypes() {
		byObject[obj] = cache.ByObject{Label: managed}
	}
	byObject[&corev1.Secret{}] = cache.ByObject{Field: packages.ValuesSecretSelector()}
	mgrOpts := ctrl.Options{
		Scheme:                        scheme,
		MapperProvider:                func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Metrics:                       metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:        opts.probeAddr,
		PprofBindAddress:              opts.pprofAddr,
		LeaderElection:                opts.leaderElect,
		LeaseDuration:                 &opts.lease,
		RenewDeadline:                 &opts.renewDeadline,
		RetryPeriod:                   &opts.retryEvery,
		LeaderElectionReleaseOnCancel: true,
		// Managed fields are a large share of every cached object and the
		// operator never reads them.
		Cache: cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields(),
			NewInformer: watch.NewInformer},
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}
	if opts.leaderElect {
		lock, err := newLock(cfg, opts)
		if err != nil {
			return err
		}
		mgrOpts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return err
	}
	helmClient, err := helm.New(cfg)
	if err != nil {
		return err
	}
	// The first plan needs the server's version; read it while the manager
	// waits for its Lease and caches.
	go helmClient.Warm()
	engine := bootstrap.NewEngine(helmClient, applier, &readiness.Checker{Reader: mgr.GetCache(), Live: mgr.GetAPIReader()}, bootstrap.NewDriftTracker())
	if err := (&tenantbundle.Reconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Bundles:          bundles.FS,
		Puller:           puller,
		Engine:           engine,
		Variants:         loaded,
		KubeMinor:        helmClient.ServerMinor,
		ProgressInterval: opts.progressInterval,
		Events:           mgr.GetEventRecorder("tenant-operator"),
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	store := &artifacts.Store{Dir: filepath.Join(opts.cacheDir, "charts"), BaseURL: opts.artifactURL}
	if store.BaseURL == "" {
		store.BaseURL = "http://" + opts.artifactAddr
	}
	if err := mgr.Add(&artifacts.Server{Store: store, Addr: opts.artifactAddr}); err != nil {
		return err
	}
	fluxTiers := func(mgr ctrl.Manager) error {
		if err := (&addons.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Bundles:   bundles.FS,
			Apply:     applier,
			APIHost:   os.Getenv("KUBERNETES_SERVICE_HOST"),
			APIPort:   os.Getenv("KUBERNETES_SERVICE_PORT"),
		}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&catalog.Reconciler{Client: mgr.GetClient(), Apply: applier.As(catalog.FieldOwner)}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&packages.Reconciler{
			Client:             mgr.GetClient(),
			APIReader:          mgr.GetAPIReader(),
			Capabilities:       helmClient.Capabilities,
			Apply:              applier,
			Puller:             puller,
			Store:              store,
			Bundles:            bundles.FS,
			PlatformNamespaces: platformNamespaces,
			BootstrapReleases:  sets.New(bootstrapReleases...),
			Events:             mgr.GetEventRecorder("tenant-operator"),
		}).SetupWithManager(mgr)
	}
	if err := mgr.Add(&addons.Starter{Manager: mgr, Apply: applier, Probe: probe, CRDs: flux.CRDs, Watched: packageCRDs,
		Timeout: opts.crdTimeout, Setup: fluxTiers}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// installCRDs applies our CRDs where they are not the binary's yet and
// waits until the API server serves TenantBundles, which the bootstrap tier
// watches. It runs on every start, so the CRDs always match the binary. The
// CRDs of the catalog kinds are returned: the controllers of the Flux tiers
// watch them, and waiting for their watches is left to those tiers' start,
// off the bootstrap's critical path.
func installCRDs(ctx context.Context, applier *apply.Engine, probe rest.Interface, timeout time.Duration) ([]*unstructured.Unstructured, error) {
	objs, err := apply.ReadStamped(manifests.CRDs, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	var bootstrapTier, fluxTiers []*unstructured.Unstructured
	for _, o := range objs {
		if group, _, _ := unstructured.NestedString(o.Object, "spec", "group"); group == tenantv1.GroupVersion.Group {
			bootstrapTier = append(bootstrapTier, o)
		} else {
			fluxTiers = append(fluxTiers, o)
		}
	}
	return fluxTiers, applier.Establish(ctx, probe, objs, bootstrapTier, timeout)
}

func newLock(cfg *rest.Config, opts options) (resourcelock.Interface, error) {
	// The two typed clients the lock uses, not a whole Clientset: building
	// one sets up a client for every API group, and those pages of code
	// stayed resident for the life of the process.
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coordination, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, opts.leaderNamespace, seed.LeaseName,
		core, coordination, resourcelock.ResourceLockConfig{Identity: opts.leaderIdentity})
}
