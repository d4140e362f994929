package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/packages"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/readiness"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

type operatorRun struct {
	// toReady is from the clock's start (from) to TenantBundle Ready.
	toReady time.Duration
	from    time.Time
	ready   time.Time
}

// How the operator meets its TenantBundle.
type operatorStart int

const (
	// seeded: the TenantBundle is applied with the rest of the seed before
	// the operator's process starts, as the seeder does; the clock starts
	// with the process.
	seeded operatorStart = iota
	// running: the operator runs and holds its Lease before the harness
	// creates the TenantBundle; the clock starts with the create request.
	running
)

func (m operatorStart) String() string {
	if m == running {
		return "operator running"
	}
	return "TenantBundle seeded"
}

type limitRun struct {
	total time.Duration
	steps map[string]time.Duration
}

// pollEvery is how often the bench polls what it does not time (a fault
// trial's convergence, the addon tier's readiness, a server coming up); what
// it times, it learns from watches (see watchwait.go).
const pollEvery = 10 * time.Millisecond

func newWorld(ctx context.Context, name string, nodes int, extra map[string][]string) (*world.World, error) {
	opts := world.Options{Name: name, CNIPodSelector: framework.CNISelector, ExtraArgs: extra}
	for i := 1; i <= nodes; i++ {
		opts.Nodes = append(opts.Nodes, world.NodeSpec{Name: fmt.Sprintf("node-%d", i)})
	}
	return world.Start(ctx, opts)
}

// measureOperator times one bootstrap to TenantBundle Ready, the operator
// started as mode says.
func measureOperator(ctx context.Context, bin string, nodes int, mode operatorStart, cpuProfile string, keepLogs bool, apiServerArgs map[string][]string) (operatorRun, error) {
	w, err := newWorld(ctx, "bench-operator", nodes, apiServerArgs)
	if err != nil {
		return operatorRun{}, err
	}
	defer func() { _ = w.Stop(keepLogs) }()
	url, _, err := framework.PushPackages(ctx, w)
	if err != nil {
		return operatorRun{}, err
	}
	cfg := framework.SeedConfig(w)
	cfg.ExtraArgs = append(cfg.ExtraArgs, "--zap-time-encoding=rfc3339nano", "--zap-log-level=debug")
	var pprofAddr string
	if cpuProfile != "" {
		if pprofAddr, err = freeAddr(); err != nil {
			return operatorRun{}, err
		}
		cfg.ExtraArgs = append(cfg.ExtraArgs, "--pprof-bind-address="+pprofAddr)
	}
	if mode == seeded {
		cfg.Bundle = framework.Bundle(w, url)
	}
	bc, err := bundleClient(w.Config)
	if err != nil {
		return operatorRun{}, err
	}
	t, err := framework.StartTenant(ctx, w, bin, cfg)
	if err != nil {
		return operatorRun{}, err
	}
	from := t.Operator.Procs[0].Started()
	profiled := func() error { return nil }
	var ready func() error
	if mode == seeded {
		// The process runs already: the watch can open no sooner than the
		// seed's CRD exists, and without discovery it is one list and one
		// watch.
		if ready, err = watchBundleReady(ctx, bc); err != nil {
			return operatorRun{}, err
		}
	}
	if mode == running {
		if err := t.WaitForLeader(ctx); err != nil {
			return operatorRun{}, err
		}
		// The harness's client learns the new kind before the clock starts:
		// its discovery is the harness's time, not the operator's.
		if err := t.WaitForBundleKind(ctx); err != nil {
			return operatorRun{}, err
		}
		if cpuProfile != "" {
			if err := waitServing(ctx, "http://"+pprofAddr+"/debug/pprof/"); err != nil {
				return operatorRun{}, err
			}
			// The profile covers the bootstrap: it starts before the
			// TenantBundle and lasts longer than any bootstrap measured here.
			saved := make(chan error, 1)
			go func() { saved <- saveProfile(ctx, pprofAddr, "profile?seconds=4", cpuProfile) }()
			profiled = func() error { return <-saved }
		}
		if ready, err = watchBundleReady(ctx, bc); err != nil {
			return operatorRun{}, err
		}
		from = time.Now()
		if err := t.ApplyBundle(ctx, framework.Bundle(w, url)); err != nil {
			return operatorRun{}, err
		}
	}
	if err := ready(); err != nil {
		return operatorRun{}, err
	}
	now := time.Now()
	if err := profiled(); err != nil {
		return operatorRun{}, err
	}
	return operatorRun{toReady: now.Sub(from), from: from, ready: now}, nil
}

// waitServing waits until url answers 200: the manager serves pprof once
// it has started.
func waitServing(ctx context.Context, url string) error {
	err := wait.PollUntilContextTimeout(ctx, pollEvery, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		return resp.Body.Close() == nil && resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}

// waitBundleReady waits until the TenantBundle is Ready at its generation.
func waitBundleReady(ctx context.Context, t *framework.Tenant) error {
	c, err := watchingClient(t.World.Config)
	if err != nil {
		return err
	}
	ready, err := watchBundleReady(ctx, c)
	if err != nil {
		return err
	}
	return ready()
}

// watchBundleReady opens a watch of the TenantBundle and returns a wait
// until it is Ready at its generation.
func watchBundleReady(ctx context.Context, c client.WithWatch) (func() error, error) {
	return watchUntil(ctx, c, &tenantv1.TenantBundleList{}, 5*time.Minute, bundleReady, bundleNamed)
}

var bundleNamed = client.MatchingFields{"metadata.name": "tenant"}

func bundleReady(objs []runtime.Object) (bool, error) {
	for _, o := range objs {
		if b := o.(*tenantv1.TenantBundle); conditions.IsReady(b) && b.Status.ObservedGeneration == b.Generation {
			return true, nil
		}
	}
	return false, nil
}

// bundleClient watches TenantBundles through a fixed REST mapping. Learning
// it from the API server's discovery is all the harness's watch would
// otherwise do before its list, and in seeded mode it cannot happen before
// the clock starts (the CRD comes with the seed): reading and decoding
// discovery would sit beside the operator's start, on the same two cores.
func bundleClient(cfg *rest.Config) (client.WithWatch, error) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(tenantv1.GroupVersion.WithKind("TenantBundle"), meta.RESTScopeRoot)
	return client.NewWithWatch(cfg, client.Options{Scheme: framework.Scheme(), Mapper: m})
}

// plan is the tenant bundle for a world, as the operator would plan it.
func plan(w *world.World) ([]bundle.Component, bundle.Facts, error) {
	def, err := bundle.Load(bundles.FS, "tenant")
	if err != nil {
		return nil, nil, err
	}
	b := framework.Bundle(w, "")
	c := b.Spec.Cluster
	facts, err := bundle.NewFacts(bundle.ClusterInput{APIEndpoint: c.APIEndpoint, PodCIDR: c.PodCIDR, ServiceCIDR: c.ServiceCIDR}, def.Settings)
	if err != nil {
		return nil, nil, err
	}
	comps, err := def.Plan(facts)
	return comps, facts, err
}

// measureCriticalPath installs each component alone, in dependency order,
// with the same Helm code the operator uses, and times install plus rollout
// until its workloads are Ready. The limit is the longest path through the
// DAG of those times: what an ideal installer could not beat.
func measureCriticalPath(ctx context.Context, nodes int, withAddons bool) (limitRun, error) {
	w, err := newWorld(ctx, "bench-limit", nodes, nil)
	if err != nil {
		return limitRun{}, err
	}
	defer w.Stop(false)
	comps, facts, err := plan(w)
	if err != nil {
		return limitRun{}, err
	}
	if withAddons {
		addons, err := defaultAddons(comps, facts)
		if err != nil {
			return limitRun{}, err
		}
		comps = append(comps, addons...)
	}
	hc, err := helm.New(w.Config)
	if err != nil {
		return limitRun{}, err
	}
	c, err := framework.Client(w)
	if err != nil {
		return limitRun{}, err
	}
	wc, err := watchingClient(w.Config)
	if err != nil {
		return limitRun{}, err
	}
	checker := &readiness.Checker{Reader: c}
	res := limitRun{steps: map[string]time.Duration{}}
	finish := map[string]time.Duration{}
	tree, err := packages.CozystackDir()
	if err != nil {
		return limitRun{}, err
	}
	for _, comp := range comps {
		ch, err := helm.BuildFromTree(helm.TreeChart{Tree: os.DirFS(tree), Path: comp.Chart.Path,
			Libraries: comp.Chart.Libraries, ValuesFiles: comp.Chart.ValuesFiles})
		if err != nil {
			return limitRun{}, err
		}
		d, err := installAlone(ctx, limiter{helm: hc, watch: wc, checker: checker}, comp, ch, facts)
		if err != nil {
			return limitRun{}, fmt.Errorf("%s: %w", comp.Name, err)
		}
		res.steps[comp.Name] = d
		var after time.Duration
		for _, dep := range comp.DependsOn {
			after = max(after, finish[dep])
		}
		finish[comp.Name] = after + d
		res.total = max(res.total, finish[comp.Name])
	}
	return res, nil
}

// defaultAddons are the always-on addons as components of the limit: each
// after the addons it needs and, when it waits for the network tier, after
// that tier's components; with the values the operator gives them.
func defaultAddons(bootstrap []bundle.Component, facts bundle.Facts) ([]bundle.Component, error) {
	catalogue, err := bundle.LoadAddons(bundles.FS, "tenant")
	if err != nil {
		return nil, err
	}
	sel, err := catalogue.Select(nil)
	if err != nil {
		return nil, err
	}
	var network []string
	for _, c := range bootstrap {
		if c.Tier == bundle.TierNetwork {
			network = append(network, c.Name)
		}
	}
	enabled := map[string]bool{}
	for _, a := range sel.Enabled {
		enabled[a.Name] = true
	}
	var out []bundle.Component
	for _, a := range sel.Enabled {
		main, missing, err := a.MainValues(facts, enabled, nil)
		if err != nil || len(missing) > 0 {
			return nil, fmt.Errorf("addon %s: values: %v (missing facts %v)", a.Name, err, missing)
		}
		var values map[string]any
		if main != nil {
			if err := json.Unmarshal(main.Raw, &values); err != nil {
				return nil, err
			}
		}
		deps := a.Needs(sel.IsEnabled)
		if a.AfterNetwork {
			deps = append(deps, network...)
		}
		for i, c := range a.Components {
			comp := bundle.Component{Name: a.Name, Tier: bundle.TierAddons, DependsOn: deps, Chart: catalogue.ChartRef(c),
				Release: bundle.ReleaseRef{Name: c.Install.ReleaseName, Namespace: c.Install.Namespace}}
			if i == 0 {
				comp.Values = values
			} else {
				comp.Name, comp.DependsOn = a.Name+"/"+c.Name, append(slices.Clone(deps), a.Name)
			}
			out = append(out, comp)
		}
	}
	return out, nil
}

// limiter is what the limit installs and judges readiness with.
type limiter struct {
	helm    *helm.Client
	watch   client.WithWatch
	checker *readiness.Checker
}

// installAlone installs one component and times it until its workloads are
// Ready by kstatus, judged when the install returns and after every change
// to a workload of its namespace.
func installAlone(ctx context.Context, l limiter, comp bundle.Component, ch *helm.Chart, facts bundle.Facts) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := workloadEvents(ctx, l.watch, comp.Release.Namespace)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	rel, err := l.helm.Install(ctx, helm.Request{Namespace: comp.Release.Namespace, Name: comp.Release.Name,
		Chart: ch, Values: bundle.Values(comp, facts, nil), Digest: "bench"})
	if err != nil {
		return 0, err
	}
	objs, err := l.helm.Objects(rel)
	if err != nil {
		return 0, err
	}
	err = untilChecked(ctx, events, 3*time.Minute, func(ctx context.Context) (bool, error) {
		h, err := l.checker.Check(ctx, objs)
		return h.Ready, err
	})
	return time.Since(start), err
}

// pidOf finds the world's process whose command line starts with name.
func pidOf(w *world.World, name string) (int, error) {
	for _, pid := range w.PIDs() {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		argv0 := strings.SplitN(string(raw), "\x00", 2)[0]
		if filepath.Base(argv0) == name {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s process", name)
}

// freeAddr is a free 127.0.0.1 port, for the operator's pprof listener.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// saveProfile fetches /debug/pprof/<profile> from the operator into path.
func saveProfile(ctx context.Context, addr, profile, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+profile, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s profile: %s", profile, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
