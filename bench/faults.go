package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
)

// fault is one kind of trouble injected into a bootstrap. It starts either
// just before the TenantBundle is created (the source is gone from the
// beginning) or at a moment drawn uniformly from [0, the median bootstrap)
// after it, so it hits the pull, either install or the waits between them.
type fault struct {
	name      string
	atRandom  bool
	hold      time.Duration // how long the fault lasts; 0 ends it at once
	start     func(ctx context.Context, t *framework.Tenant) error
	end       func(ctx context.Context, t *framework.Tenant) error
	converges string // what "converged" is measured from, for the report
}

// faultKinds are the trials of issue [7]: the operator killed, the API server
// restarted, the registry unavailable for a minute, a node deleted and
// re-added. The operator is restarted whenever it exits, as the kubelet would.
var faultKinds = map[string]fault{
	"kill": {name: "operator SIGKILL (process group), restarted at once", atRandom: true,
		start: func(_ context.Context, t *framework.Tenant) error { return t.Operator.Procs[0].Kill() },
		end:   func(context.Context, *framework.Tenant) error { return nil }, converges: "the kill"},
	"apiserver": {name: "kube-apiserver SIGKILL, started again 20 s later", atRandom: true, hold: 20 * time.Second,
		start:     func(_ context.Context, t *framework.Tenant) error { return t.World.Outage(world.KubeAPIServer) },
		end:       func(ctx context.Context, t *framework.Tenant) error { return t.World.Resume(ctx, world.KubeAPIServer) },
		converges: "API server /readyz again"},
	"controlplane": {name: "control plane (kube-apiserver, kcm, scheduler: one Kamaji pod) SIGKILLed, started again 20 s later",
		atRandom: true, hold: 20 * time.Second,
		start: func(_ context.Context, t *framework.Tenant) error {
			return errors.Join(t.World.Outage(world.KubeAPIServer), t.World.Outage(world.KubeControllerManager),
				t.World.Outage(world.KubeScheduler))
		},
		end: func(ctx context.Context, t *framework.Tenant) error {
			return errors.Join(t.World.Resume(ctx, world.KubeAPIServer), t.World.Resume(ctx, world.KubeControllerManager),
				t.World.Resume(ctx, world.KubeScheduler))
		},
		converges: "API server /readyz again"},
	"registry": {name: "registry down from before the TenantBundle for 60 s", hold: time.Minute,
		start:     func(_ context.Context, t *framework.Tenant) error { return t.World.Outage(world.Registry) },
		end:       func(ctx context.Context, t *framework.Tenant) error { return t.World.Resume(ctx, world.Registry) },
		converges: "registry serving again"},
	"node": {name: "node-1 deleted, registered again 5 s later", atRandom: true, hold: 5 * time.Second,
		start: func(ctx context.Context, t *framework.Tenant) error {
			return t.World.Clientset.CoreV1().Nodes().Delete(ctx, "node-1", metav1.DeleteOptions{})
		},
		end: func(ctx context.Context, t *framework.Tenant) error {
			return t.World.AddNode(ctx, world.NodeSpec{Name: "node-1"})
		},
		converges: "node registered again"},
}

// faultOrder is the order of the fault kinds in the report.
var faultOrder = []string{"kill", "apiserver", "controlplane", "registry", "node"}

// faultTrial is one bootstrap with one fault injected, or a draw whose
// moment came after Ready (late) and injected nothing.
type faultTrial struct {
	kind        string
	at          time.Duration // fault start, from TenantBundle creation
	late        bool          // the TenantBundle was Ready at the drawn moment: no fault, drawn again
	beforeReady bool          // the fault started before the TenantBundle was Ready
	converged   bool
	toConverge  time.Duration // from the end of the fault to Ready
	exits       int           // operator exits (an injected kill included), each followed by a restart
	badReleases int           // revisions left pending, or a release whose latest revision is not deployed, at the end
	recreated   int           // bootstrap workloads whose UID changed: uninstalled and installed again
}

// redraws bounds how often one trial's moment is drawn again when it came
// after Ready; the last draw is injected wherever it lands, and the report
// says so.
const redraws = 3

// measureFaults runs n trials of kind, each in a fresh world. The issue asks
// for faults during the bootstrap, and a moment drawn from the median
// bootstrap comes after a quick one's Ready now and then: that draw injects
// nothing, is kept (late) for the report, and the trial is drawn again.
func measureFaults(ctx context.Context, bin string, o options, kind string, n int, window time.Duration) ([]faultTrial, error) {
	f := faultKinds[kind]
	var out []faultTrial
	for i := range n {
		for draw := 0; ; draw++ {
			var at time.Duration
			if f.atRandom {
				at = time.Duration(rand.Int64N(int64(window)))
			}
			tr, err := faultTrialRun(ctx, bin, o, kind, at, draw < redraws)
			if err != nil {
				return nil, fmt.Errorf("%s trial %d: %w", kind, i+1, err)
			}
			out = append(out, tr)
			if tr.late {
				fmt.Printf("  %s trial %d/%d: at %s the TenantBundle was Ready already; no fault, drawn again\n",
					kind, i+1, n, tr.at.Round(time.Millisecond))
				continue
			}
			fmt.Printf("  %s trial %d/%d: at %s (before Ready: %t), converged=%t in %s, operator exits %d, bad releases %d, recreated %d\n",
				kind, i+1, n, tr.at.Round(time.Millisecond), tr.beforeReady, tr.converged, tr.toConverge.Round(time.Millisecond),
				tr.exits, tr.badReleases, tr.recreated)
			break
		}
	}
	return out, nil
}

// faultTrialRun runs one trial; skipLate returns a late draw instead of
// injecting the fault into a bootstrap that is over.
func faultTrialRun(ctx context.Context, bin string, o options, kind string, at time.Duration, skipLate bool) (tr faultTrial, err error) {
	f := faultKinds[kind]
	tr = faultTrial{kind: kind, at: at, beforeReady: true}
	w, err := newWorld(ctx, "bench-"+kind, o.nodes, nil)
	if err != nil {
		return tr, err
	}
	// The logs of a trial that did not converge go to _artifacts.
	defer func() { _ = w.Stop(o.keepLogs || (!tr.converged && !tr.late)) }()
	url, _, err := framework.PushPackages(ctx, w)
	if err != nil {
		return tr, err
	}
	t, err := framework.StartTenant(ctx, w, bin, framework.SeedConfig(w))
	if err != nil {
		return tr, err
	}
	exits := supervise(ctx, t.Operator.Procs[0])
	defer exits.stop()
	if !f.atRandom {
		if err := f.start(ctx, t); err != nil {
			return tr, err
		}
	}
	if err := t.ApplyBundle(ctx, framework.Bundle(w, url)); err != nil {
		return tr, err
	}
	var uids map[string]string
	if f.atRandom {
		// The random moment is the experiment, not a wait for anything.
		if err := pause(ctx, at); err != nil {
			return tr, err
		}
		if uids, err = framework.WorkloadUIDs(ctx, t.Client); err != nil {
			return tr, err
		}
		// Read last, so that "before Ready" is as close to the fault as it gets.
		if b, err := t.Bundle(ctx, "tenant"); err == nil {
			tr.beforeReady = !conditions.IsReady(b)
		}
		if !tr.beforeReady && skipLate {
			tr.late = true
			return tr, nil
		}
		if err := f.start(ctx, t); err != nil {
			return tr, err
		}
	}
	// So is the fault's duration.
	if err := pause(ctx, f.hold); err != nil {
		return tr, err
	}
	if err := f.end(ctx, t); err != nil {
		return tr, err
	}
	ended := time.Now()
	if err := waitConverged(ctx, t); err != nil {
		return tr, nil // not converged within the bound: reported as such
	}
	tr.converged, tr.toConverge = true, time.Since(ended)
	tr.exits = exits.count()
	tr.badReleases, tr.recreated, err = damage(ctx, t, uids)
	return tr, err
}

// waitConverged asks the operator for a reconcile once the fault is over
// and waits until it has handled that request with the TenantBundle Ready
// at its generation, and every node is Ready: a Ready left over from before
// a fault that came after the bootstrap proves nothing, and a Ready bundle
// over a node that never came back (its CNI pod lost, say) would not be a
// recovered cluster.
func waitConverged(ctx context.Context, t *framework.Tenant) error {
	token := fmt.Sprintf("converged-%d", time.Now().UnixNano())
	requested := false
	return wait.PollUntilContextTimeout(ctx, pollEvery, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		b, err := t.Bundle(ctx, "tenant")
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if !requested {
			// Retried on the next poll: the API server may still be warming up.
			patch := client.MergeFrom(b.DeepCopy())
			b.SetAnnotations(labels.Merge(b.GetAnnotations(), map[string]string{meta.ReconcileRequestAnnotation: token}))
			requested = t.Client.Patch(ctx, b, patch) == nil
			return false, nil
		}
		if b.Status.LastHandledReconcileAt != token || !conditions.IsReady(b) || b.Status.ObservedGeneration != b.Generation {
			return false, nil
		}
		var nodes corev1.NodeList
		if err := t.Client.List(ctx, &nodes); err != nil {
			return false, err
		}
		for i := range nodes.Items {
			if !framework.NodeReady(&nodes.Items[i]) {
				return false, nil
			}
		}
		return true, nil
	})
}

// damage counts the revisions that leave a release in a bad state
// (framework.Unsettled: pending, or a latest revision not deployed) and
// workloads whose UID changed since before.
func damage(ctx context.Context, t *framework.Tenant, before map[string]string) (bad, recreated int, err error) {
	hist, err := framework.ReleaseHistory(ctx, t.Client)
	if err != nil {
		return 0, 0, err
	}
	bad = len(framework.Unsettled(hist))
	after, err := framework.WorkloadUIDs(ctx, t.Client)
	if err != nil {
		return 0, 0, err
	}
	for key, uid := range after {
		if b, ok := before[key]; ok && b != uid {
			recreated++
		}
	}
	return bad, recreated, nil
}

func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
