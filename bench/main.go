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
	"syscall"
	"time"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
)

type options struct {
	runs, kills int
	idle        time.Duration
	out         string
	nodes       int
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 3, "runs of each measurement; the median is reported")
	flag.DurationVar(&o.idle, "idle", 3*time.Minute, "idle window after Ready for the API-traffic and RSS measurement")
	flag.IntVar(&o.nodes, "nodes", 3, "fake nodes per world")
	flag.IntVar(&o.kills, "kill-trials", 10, "bootstraps during which the operator is killed with SIGKILL at a random moment")
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "where to write the report")
	flag.Parse()
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
	r := &report{started: time.Now(), runs: o.runs, nodes: o.nodes, idleWindow: o.idle}
	for i := range o.runs {
		fmt.Printf("run %d/%d\n", i+1, o.runs)
		op, err := measureOperator(ctx, operator, o.nodes)
		if err != nil {
			return fmt.Errorf("operator bootstrap: %w", err)
		}
		lim, err := measureCriticalPath(ctx, o.nodes)
		if err != nil {
			return fmt.Errorf("critical path: %w", err)
		}
		fl, err := measureFluxChain(ctx, o.nodes)
		if err != nil {
			return fmt.Errorf("flux chain: %w", err)
		}
		fmt.Printf("  operator %.2fs (from start %.2fs), limit %.2fs %v, flux %.2fs\n",
			op.applyToReady.Seconds(), op.startToReady.Seconds(), lim.total.Seconds(), lim.steps, fl.ready.Seconds())
		r.operator = append(r.operator, op)
		r.limit = append(r.limit, lim)
		r.flux = append(r.flux, fl)
	}
	idle, err := measureIdle(ctx, operator, o.nodes, o.idle)
	if err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	r.idle = idle
	// Kills land in [0, the median bootstrap): the pull, both installs and
	// the waits between them.
	var ops []time.Duration
	for _, op := range r.operator {
		ops = append(ops, op.applyToReady)
	}
	if r.kills, err = measureKillTrials(ctx, operator, o.nodes, o.kills, median(ops)); err != nil {
		return fmt.Errorf("kill trials: %w", err)
	}
	return os.WriteFile(o.out, []byte(r.markdown()), 0o644)
}
