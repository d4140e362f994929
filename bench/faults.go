package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

// killTrial is one bootstrap during which the operator was killed with
// SIGKILL at a random moment and restarted, as the kubelet would.
type killTrial struct {
	killAfter   time.Duration // from TenantBundle creation
	beforeReady bool          // the kill landed before the TenantBundle was Ready
	converged   bool
	toConverge  time.Duration // from the kill to Ready
	badReleases int           // revisions left pending-* or failed at the end
	recreated   int           // bootstrap workloads whose UID changed: uninstalled and installed again
}

// measureKillTrials runs n trials, each in a fresh world: the kill lands
// uniformly in [0, window), window being the operator's median bootstrap, so
// it hits the pull, either install or the waits between them.
func measureKillTrials(ctx context.Context, bin string, nodes, n int, window time.Duration) ([]killTrial, error) {
	var out []killTrial
	for i := range n {
		tr, err := killTrialRun(ctx, bin, nodes, time.Duration(rand.Int64N(int64(window))))
		if err != nil {
			return nil, fmt.Errorf("trial %d: %w", i+1, err)
		}
		fmt.Printf("  kill trial %d/%d: killed after %s (before Ready: %t), converged=%t in %s, bad releases %d, recreated %d\n",
			i+1, n, tr.killAfter.Round(time.Millisecond), tr.beforeReady, tr.converged, tr.toConverge.Round(time.Millisecond), tr.badReleases, tr.recreated)
		out = append(out, tr)
	}
	return out, nil
}

func killTrialRun(ctx context.Context, bin string, nodes int, killAfter time.Duration) (killTrial, error) {
	tr := killTrial{killAfter: killAfter}
	w, err := newWorld(ctx, "bench-kill", nodes, nil)
	if err != nil {
		return tr, err
	}
	defer w.Stop(false)
	url, _, err := framework.PushPackages(ctx, w)
	if err != nil {
		return tr, err
	}
	t, err := framework.StartTenant(ctx, w, bin, framework.SeedConfig(w))
	if err != nil {
		return tr, err
	}
	if err := t.ApplyBundle(ctx, framework.Bundle(w, url)); err != nil {
		return tr, err
	}
	// The random moment is the experiment, not a wait for anything.
	select {
	case <-ctx.Done():
		return tr, ctx.Err()
	case <-time.After(killAfter):
	}
	uids, err := framework.WorkloadUIDs(ctx, t.Client)
	if err != nil {
		return tr, err
	}
	if b, err := t.Bundle(ctx, "tenant"); err == nil {
		tr.beforeReady = !conditions.IsReady(b)
	}
	proc := t.Operator.Procs[0]
	if err := proc.Kill(); err != nil {
		return tr, err
	}
	killed := time.Now()
	if err := proc.Restart(ctx); err != nil {
		return tr, err
	}
	if err := waitBundleReady(ctx, t); err != nil {
		return tr, nil // not converged within the bound: reported as such
	}
	tr.converged, tr.toConverge = true, time.Since(killed)
	hist, err := framework.ReleaseHistory(ctx, t.Client)
	if err != nil {
		return tr, err
	}
	for _, r := range hist {
		if r.Status != "deployed" && r.Status != "superseded" {
			tr.badReleases++
		}
	}
	after, err := framework.WorkloadUIDs(ctx, t.Client)
	if err != nil {
		return tr, err
	}
	for key, uid := range after {
		if before, ok := uids[key]; ok && before != uid {
			tr.recreated++
		}
	}
	return tr, nil
}
