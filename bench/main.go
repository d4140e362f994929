// Command bench measures the bootstrap tier side by side in one run and
// writes BENCHMARKS.md: the operator's bootstrap against the critical-path
// limit of the same DAG and against the same bundle as a Flux-only dependsOn
// chain, then the operator's footprint at idle. Timings on a 2-core machine
// are noisy, so only ratios of numbers measured in the same run are judged.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
)

type options struct {
	runs, kills, faults, toggles, dependencies int
	tenantRuns                                 int
	idle                                       time.Duration
	out                                        string
	nodes                                      int
	sizes, faultKinds                          string
	strict, keepLogs, breakdown                bool
	heapProfile, cpuProfile                    string
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 7, "runs of each measurement; the median is reported (a run's limit alone moves by half either way on two shared cores)")
	flag.DurationVar(&o.idle, "idle", 3*time.Minute, "idle window after Ready for the API-traffic and RSS measurement (0 skips it and the toggle latency)")
	flag.IntVar(&o.nodes, "nodes", 3, "fake nodes per world")
	flag.IntVar(&o.kills, "kill-trials", 10, "bootstraps during which the operator is killed with SIGKILL at a random moment")
	flag.IntVar(&o.faults, "fault-trials", 3, "bootstraps per fault kind: API server restarted, registry down for a minute, a node deleted and re-added")
	flag.IntVar(&o.tenantRuns, "tenant-runs", 3, "runs of the whole tenant (TenantBundle → AddonsReady) against Cozystack's management-side chain (0 skips it)")
	flag.IntVar(&o.toggles, "toggles", 20, "addon enable/disable rounds for the toggle latency")
	flag.IntVar(&o.dependencies, "dependency-rounds", 5, "rounds of enabling an addon with its dependency for the dependency latency")
	flag.StringVar(&o.sizes, "sizes", "1,10,50", "comma-separated node counts at which bootstrap, limit and Flux chain are measured once more (empty: none)")
	flag.BoolVar(&o.strict, "strict", false, "exit non-zero when a fault trial does not converge or leaves a pending revision, a release whose latest revision is not deployed, or a recreated workload (timings are never judged)")
	flag.StringVar(&o.heapProfile, "heap-profile", "", "write the operator's heap profile at the end of the idle window to this file (go tool pprof)")
	flag.StringVar(&o.cpuProfile, "cpu-profile", "", "profile the operator during one extra, untimed bootstrap and write the CPU profile to this file (go tool pprof)")
	flag.BoolVar(&o.breakdown, "breakdown", true, "two extra bootstraps (the TenantBundle seeded, and created for a running operator) with the API server's audit log on, to split the operator's latency from the cluster's")
	flag.BoolVar(&o.keepLogs, "keep-logs", false, "keep the logs of every operator bootstrap and fault trial in _artifacts (fault trials that did not converge are always kept), and the audit logs of the breakdowns and the idle world")
	flag.StringVar(&o.faultKinds, "faults", strings.Join(faultOrder, ","), "fault kinds to run trials of")
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "where to write the report")
	flag.Parse()
	// The harness's own clients log nothing worth reading; the components'
	// logs are in each world's files.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	bin, err := world.BinDir()
	if err != nil {
		return err
	}
	operator, err := framework.BuildOperator(bin)
	if err != nil {
		return err
	}
	sizes, err := parseSizes(o.sizes)
	if err != nil {
		return err
	}
	if o.runs < 1 {
		return fmt.Errorf("-runs must be at least 1: the fault trials and every ratio start from it")
	}
	r := &report{started: time.Now(), runs: o.runs, nodes: o.nodes, idleWindow: o.idle, faults: map[string][]faultTrial{}}
	if o.cpuProfile != "" {
		// A bootstrap of its own: profiling costs CPU, so it is not timed.
		fmt.Println("profiling one bootstrap")
		if _, err := measureOperator(ctx, operator, o.nodes, running, o.cpuProfile, o.keepLogs, nil); err != nil {
			return fmt.Errorf("profiled bootstrap: %w", err)
		}
	}
	for i := range o.runs {
		fmt.Printf("run %d/%d\n", i+1, o.runs)
		s, err := measureSpeed(ctx, operator, o.nodes, o.keepLogs)
		if err != nil {
			return err
		}
		r.speed = append(r.speed, s)
	}
	if o.breakdown {
		for _, mode := range []operatorStart{seeded, running} {
			fmt.Printf("breakdown: one bootstrap with the audit log on, %s\n", mode)
			d, err := measureBreakdown(ctx, operator, o.nodes, mode, o.keepLogs)
			if err != nil {
				return fmt.Errorf("breakdown, %s: %w", mode, err)
			}
			r.breakdowns = append(r.breakdowns, d)
		}
	}
	for _, n := range sizes {
		fmt.Printf("size: %d nodes\n", n)
		s, err := measureSpeed(ctx, operator, n, o.keepLogs)
		if err != nil {
			return fmt.Errorf("%d nodes: %w", n, err)
		}
		r.sizes = append(r.sizes, s)
	}
	for i := range o.tenantRuns {
		fmt.Printf("whole tenant %d/%d\n", i+1, o.tenantRuns)
		var t tenantRun
		if t.operator, err = measureWholeTenant(ctx, operator, o.nodes); err != nil {
			return fmt.Errorf("whole tenant: %w", err)
		}
		if t.management, t.releases, err = measureManagementChain(ctx, o.nodes, nil); err != nil {
			return fmt.Errorf("management chain: %w", err)
		}
		if t.limit, err = measureCriticalPath(ctx, o.nodes, true); err != nil {
			return fmt.Errorf("whole tenant, critical path: %w", err)
		}
		fmt.Printf("  operator %.2fs, management-side chain %.2fs, limit %.2fs %v\n", t.operator.Seconds(), t.management.Seconds(), t.limit.total.Seconds(), t.limit.steps)
		r.tenant = append(r.tenant, t)
	}
	if o.idle > 0 {
		if r.idle, err = measureIdle(ctx, operator, o); err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		fmt.Println("flux footprint: the whole tenant's releases with helm-controller and source-controller")
		if r.flux, err = measureFluxFootprint(ctx, o.nodes, settle+o.idle); err != nil {
			return fmt.Errorf("flux footprint: %w", err)
		}
	}
	var ops []time.Duration
	for _, s := range r.speed {
		ops = append(ops, s.seeded.toReady)
	}
	for _, kind := range strings.Split(o.faultKinds, ",") {
		if _, ok := faultKinds[kind]; !ok {
			return fmt.Errorf("-faults: unknown fault %q", kind)
		}
		n := o.faults
		if kind == "kill" {
			n = o.kills
		}
		if r.faults[kind], err = measureFaults(ctx, operator, o, kind, n, median(ops)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(o.out, []byte(r.markdown()), 0o644); err != nil {
		return err
	}
	if o.strict {
		return r.faultsClean()
	}
	return nil
}

// speed is one side-by-side measurement of the three ways to bootstrap.
type speed struct {
	nodes int
	// seeded is process start → Ready with the TenantBundle seeded first;
	// running is TenantBundle created → Ready with the operator running.
	seeded, running operatorRun
	limit           limitRun
	flux            fluxResult
}

func measureSpeed(ctx context.Context, operator string, nodes int, keepLogs bool) (speed, error) {
	s := speed{nodes: nodes}
	var err error
	if s.seeded, err = measureOperator(ctx, operator, nodes, seeded, "", keepLogs, nil); err != nil {
		return s, fmt.Errorf("operator bootstrap, seeded: %w", err)
	}
	if s.running, err = measureOperator(ctx, operator, nodes, running, "", keepLogs, nil); err != nil {
		return s, fmt.Errorf("operator bootstrap, running: %w", err)
	}
	if s.limit, err = measureCriticalPath(ctx, nodes, false); err != nil {
		return s, fmt.Errorf("critical path: %w", err)
	}
	if s.flux, err = measureFluxChain(ctx, nodes); err != nil {
		return s, fmt.Errorf("flux chain: %w", err)
	}
	fmt.Printf("  operator from process start %.2fs, from TenantBundle created %.2fs, limit %.2fs %v, flux %.2fs\n", s.seeded.toReady.Seconds(),
		s.running.toReady.Seconds(), s.limit.total.Seconds(), s.limit.steps, s.flux.ready.Seconds())
	return s, nil
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sizes: %q is not a node count", f)
		}
		out = append(out, n)
	}
	return out, nil
}
