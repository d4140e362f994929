package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/internal/seed"
)

// idleResult is the operator's footprint once the cluster is Ready.
type idleResult struct {
	window                        time.Duration
	requests, writes, leaseWrites int
	// other counts requests on anything but the leader-election Lease.
	other  int
	byVerb map[string]int
	// mem is its memory at the window's end.
	mem framework.Memory
	// peakAnon is the most anonymous memory it held from its start until
	// the addons were Ready.
	peakAnon float64
	// floor is the same binary's memory at its first API request.
	floor  framework.Memory
	binary int64
	// settle counts the same for the settle period before the window.
	settle *idleResult
	// watches are the operator's watches still open at the window's end,
	// which it renews when their timeout runs out.
	watches openWatches
	// toggle holds, per round, addon enabled → its HelmRelease created.
	toggle []time.Duration
	// dependency holds, per round, a dependency's HelmRelease Ready → its
	// dependent's HelmRelease created.
	dependency []time.Duration
}

// measureIdle bootstraps a tenant with the API server's audit log on, waits
// for Ready, then counts the operator's requests over the window from the
// audit log (filtered by its ServiceAccount) and reads its memory at the
// end.
func measureIdle(ctx context.Context, bin string, o options) (idleResult, error) {
	nodes, window := o.nodes, o.idle
	floor, err := measureFloor(ctx, bin)
	if err != nil {
		return idleResult{}, fmt.Errorf("RSS before the first API request: %w", err)
	}
	log, args, cleanup, err := auditing()
	if err != nil {
		return idleResult{}, err
	}
	if o.keepLogs {
		fmt.Println("  audit log kept in", log)
	} else {
		defer cleanup()
	}
	w, err := newWorld(ctx, "bench-idle", nodes, args)
	if err != nil {
		return idleResult{}, err
	}
	defer func() { _ = w.Stop(o.keepLogs) }()
	url, _, err := framework.PushPackages(ctx, w)
	if err != nil {
		return idleResult{}, err
	}
	cfg := framework.SeedConfig(w)
	pprofAddr := ""
	if o.heapProfile != "" {
		if pprofAddr, err = freeAddr(); err != nil {
			return idleResult{}, err
		}
		cfg.ExtraArgs = append(cfg.ExtraArgs, "--pprof-bind-address="+pprofAddr)
	}
	t, err := framework.StartTenant(ctx, w, bin, cfg)
	if err != nil {
		return idleResult{}, err
	}
	peak := framework.SamplePeak(t.Operator.Procs[0].PID(), sampleEvery)
	if err := t.ApplyBundle(ctx, framework.Bundle(w, url)); err != nil {
		return idleResult{}, err
	}
	// The full bundle: the addon tier too, reconciled by Flux run from the
	// Deployment the operator applied.
	if _, err := t.RunFlux(ctx); err != nil {
		return idleResult{}, err
	}
	if err := waitBundleReady(ctx, t); err != nil {
		return idleResult{}, err
	}
	if err := waitAddonsReady(ctx, t); err != nil {
		return idleResult{}, err
	}
	ready := time.Now()
	peakAnon, err := peak.Stop()
	if err != nil {
		return idleResult{}, err
	}
	size, err := binarySize(t.Operator.Procs[0].PID())
	if err != nil {
		return idleResult{}, err
	}
	fmt.Printf("  settling for %s, then an idle window of %s\n", settle, window)
	// The measurement is the windows themselves: nothing is awaited here.
	select {
	case <-ctx.Done():
		return idleResult{}, ctx.Err()
	case <-time.After(settle + window):
	}
	to := time.Now()
	from := ready.Add(settle)
	res := idleResult{window: to.Sub(from), byVerb: map[string]int{}, floor: floor, peakAnon: peakAnon, binary: size}
	res.settle = &idleResult{window: settle, byVerb: map[string]int{}}
	if res.mem, err = framework.ReadMemory(t.Operator.Procs[0].PID()); err != nil {
		return idleResult{}, err
	}
	if o.heapProfile != "" {
		// After a forced GC, so it shows what is live at idle.
		if err := saveProfile(ctx, pprofAddr, "heap?gc=1", o.heapProfile); err != nil {
			return idleResult{}, err
		}
	}
	user := fmt.Sprintf("system:serviceaccount:%s:%s", seed.DefaultNamespace, seed.Name)
	if err := countRequests(log, user, ready, from, res.settle); err != nil {
		return idleResult{}, err
	}
	if err := countRequests(log, user, from, to, &res); err != nil {
		return idleResult{}, err
	}
	if res.watches, err = watchesOpen(log, user, to); err != nil {
		return idleResult{}, err
	}
	fmt.Printf("  toggling %s %d times\n", toggleAddon, o.toggles)
	if res.toggle, err = measureToggle(ctx, t, o.toggles); err != nil {
		return res, err
	}
	fmt.Printf("  enabling %s with %s %d times\n", dependentAddon, dependencyAddon, o.dependencies)
	res.dependency, err = measureDependency(ctx, t, o.dependencies)
	return res, err
}

// settle is how long after Ready the cluster gets to finish rolling out
// (kube-controller-manager's last status updates) before the idle window
// opens; what the operator does in it is reported on its own line.
const settle = 30 * time.Second

func countRequests(path, user string, from, to time.Time, res *idleResult) error {
	return readAudit(path, func(e *auditEvent) {
		// One entry per request: a watch at its start, anything else when done.
		once := (e.Verb == "watch" && e.Stage == "ResponseStarted") || (e.Verb != "watch" && e.Stage == "ResponseComplete")
		if !once || e.User.Username != user || e.Received.Before(from) || e.Received.After(to) {
			return
		}
		res.requests++
		what := e.Verb
		if e.ObjectRef != nil {
			what += " " + strings.TrimSuffix(e.ObjectRef.Resource+"/"+e.ObjectRef.Subresource, "/")
		}
		if e.dryRun() {
			what += " (dry run)"
		}
		res.byVerb[what]++
		if e.resource() != "leases" {
			res.other++
		}
		if e.writes() {
			res.writes++
			if e.resource() == "leases" {
				res.leaseWrites++
			}
		}
	})
}

// openWatches are the long-running watches of a client at one moment.
type openWatches struct {
	resources []string
	// shortest and longest are the timeouts those watches asked for: each
	// is renewed by a new watch request when its timeout runs out.
	shortest, longest time.Duration
}

// renewalsPerMinute bounds the requests the watches make by being renewed:
// at most one per watch per its timeout.
func (w openWatches) renewalsPerMinute() float64 {
	if len(w.resources) == 0 || w.shortest <= 0 {
		return 0
	}
	return float64(len(w.resources)) / w.shortest.Minutes()
}

// watchesOpen reads from the audit log the watches of user that had started
// by t and not ended: a window shorter than their timeouts never sees them
// renewed, so they are reported with the timeouts they asked for.
func watchesOpen(path, user string, t time.Time) (openWatches, error) {
	started := map[string]*auditEvent{}
	err := readAudit(path, func(e *auditEvent) {
		if e.Verb != "watch" || e.User.Username != user || e.Received.After(t) {
			return
		}
		switch {
		case e.Stage == "ResponseStarted":
			started[e.AuditID] = e
		case e.Stage == "ResponseComplete" && !e.Completed.After(t):
			delete(started, e.AuditID)
		}
	})
	var res openWatches
	for _, e := range started {
		u, perr := url.Parse(e.RequestURI)
		if perr != nil {
			return res, perr
		}
		secs, perr := strconv.Atoi(u.Query().Get("timeoutSeconds"))
		if perr != nil {
			return res, fmt.Errorf("watch %s names no timeoutSeconds", e.RequestURI)
		}
		d := time.Duration(secs) * time.Second
		if res.shortest == 0 || d < res.shortest {
			res.shortest = d
		}
		res.longest = max(res.longest, d)
		res.resources = append(res.resources, e.resource())
	}
	slices.Sort(res.resources)
	return res, err
}
