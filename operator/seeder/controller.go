// Package seeder is the management side's controller: once a tenant's
// Kamaji control plane is Ready and its admin kubeconfig exists, it puts
// the operator and the TenantBundle into the tenant (internal/seed), then
// leaves the tenant alone except for the fields the management side owns,
// and mirrors the tenant's TenantBundle conditions into the TenantSeed.
package seeder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/seed"
	"github.com/cozystack/tenant-operator/internal/statuswrite"
	seederv1 "github.com/cozystack/tenant-operator/operator/apis/seeder/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// Conditions of a TenantSeed and their reasons.
const (
	ReadyCondition           = "Ready"
	SeededCondition          = "Seeded"
	TenantReachableCondition = "TenantReachable"

	ReasonControlPlaneNotFound = "TenantControlPlaneNotFound"
	ReasonControlPlaneNotReady = "TenantControlPlaneNotReady"
	ReasonKubeconfigMissing    = "AdminKubeconfigMissing"
	ReasonUnreachable          = "TenantUnreachable"
	ReasonWaitingForKind       = "WaitingForTenantBundleKind"
	ReasonInvalidSpec          = "InvalidSpec"
	ReasonSeeded               = "Seeded"
	ReasonTenantStatus         = "TenantStatus"
)

// Reconciler reconciles TenantSeeds.
type Reconciler struct {
	client.Client
	// APIReader reads the admin kubeconfig Secret, which is not cached.
	APIReader client.Reader
	// Tenants builds clients of tenant clusters.
	Tenants *TenantClients
	// StatusInterval is how often a seeded tenant's status is read back.
	StatusInterval time.Duration
	// Events records a tenant seeded (the first time, or with a new
	// version). Nil records nothing.
	Events events.EventRecorder

	// written is the status this process last wrote, per TenantSeed (see
	// statuswrite).
	written statuswrite.Memo[seederv1.TenantSeedStatus]
}

// Reconcile seeds the tenant when its control plane is ready and mirrors its
// status. No finalizer: a dead tenant can never hold up a deletion, and a
// deleted TenantControlPlane simply ends the seeding.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	ts := &seederv1.TenantSeed{}
	if err := r.Get(ctx, req.NamespacedName, ts); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ts.DeletionTimestamp.IsZero() || ts.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	before := ts.DeepCopy()
	defer func() {
		summarize(ts, retErr)
		if _, isTerminal := outcome.Classify(retErr); retErr == nil || isTerminal {
			ts.Status.ObservedGeneration = ts.Generation
		}
		if err := r.writeStatus(ctx, before, ts); err != nil {
			retErr = outcome.AfterStatusWrite(retErr, client.IgnoreNotFound(err))
		}
	}()
	tenant, err := r.tenant(ctx, ts)
	if err != nil || tenant == nil {
		return ctrl.Result{}, err
	}
	if needsSeed(ts) {
		if err := r.seed(ctx, ts, tenant.Client); err != nil {
			if errors.Is(err, errKindNotServed) {
				return ctrl.Result{RequeueAfter: r.StatusInterval}, nil
			}
			return ctrl.Result{}, err
		}
	}
	if err := r.readBack(ctx, ts, tenant.Client); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.StatusInterval}, nil
}

// writeStatus writes ts's status unless nothing changed (see statuswrite):
// this controller is the only writer of TenantSeed status.
func (r *Reconciler) writeStatus(ctx context.Context, before, ts *seederv1.TenantSeed) error {
	return r.written.MergePatch(ctx, r.Client, before, ts, seedStatus)
}

func seedStatus(o client.Object) *seederv1.TenantSeedStatus { return &o.(*seederv1.TenantSeed).Status }

// resyncEvery re-applies the seed even when nothing changed on the
// management side, restoring a seeded object someone deleted in the tenant.
const resyncEvery = 10 * time.Minute

// needsSeed: the tenant is left alone between changes of the TenantSeed,
// apart from a periodic resync; status reads do not re-apply anything.
func needsSeed(ts *seederv1.TenantSeed) bool {
	return ts.Status.ObservedGeneration != ts.Generation ||
		!conditions.IsTrue(ts, SeededCondition) ||
		ts.Status.LastSeedTime == nil || time.Since(ts.Status.LastSeedTime.Time) > resyncEvery
}

// errKindNotServed: the seed created the TenantBundle CRD, but the tenant's
// API server does not serve the kind yet (discovery lags Established by a
// moment); tried again after StatusInterval.
var errKindNotServed = errors.New("the TenantBundle kind is not served yet")

// seed applies the operator, its CRDs and the TenantBundle as the management
// side, in one pass: nothing waits for the operator's pod to start.
func (r *Reconciler) seed(ctx context.Context, ts *seederv1.TenantSeed, c client.Client) error {
	cfg, err := seedConfig(ts)
	if err != nil {
		return outcome.Terminal(ReasonInvalidSpec, "%v", err)
	}
	if err := seed.ApplyOperator(ctx, c, cfg); err != nil {
		return r.unreachable(ts, err)
	}
	news := !conditions.IsTrue(ts, SeededCondition) || ts.Status.SeededVersion != cfg.Version
	ts.Status.SeededVersion = cfg.Version
	err = seed.ApplyBundle(ctx, c, cfg.Bundle)
	switch {
	case meta.IsNoMatchError(err):
		conditions.MarkFalse(ts, SeededCondition, ReasonWaitingForKind, "operator %s seeded; waiting for the API server to serve the TenantBundle kind", cfg.Version)
		return errKindNotServed
	case err != nil:
		return r.unreachable(ts, err)
	}
	conditions.MarkTrue(ts, SeededCondition, ReasonSeeded, "operator %s and TenantBundle applied", cfg.Version)
	if news && r.Events != nil {
		// The periodic re-seed of the same version is not news.
		r.Events.Eventf(ts, nil, corev1.EventTypeNormal, ReasonSeeded, "Seed", "operator %s and the TenantBundle applied to the tenant", cfg.Version)
	}
	now := metav1.Now()
	ts.Status.LastSeedTime = &now
	return nil
}

// unreachable records a failed request to the tenant; returned as an error
// so that controller-runtime backs off, never a crash.
func (r *Reconciler) unreachable(ts *seederv1.TenantSeed, err error) error {
	conditions.MarkFalse(ts, TenantReachableCondition, ReasonUnreachable, "%v", err)
	return outcome.Retry(ReasonUnreachable, err)
}

// readBack mirrors the tenant's TenantBundle conditions; Ready follows the
// tenant's Ready (see summarize).
func (r *Reconciler) readBack(ctx context.Context, ts *seederv1.TenantSeed, c client.Client) error {
	tb := &tenantv1.TenantBundle{}
	if err := c.Get(ctx, client.ObjectKey{Name: seed.BundleName}, tb); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil // not seeded yet
		}
		return r.unreachable(ts, err)
	}
	conditions.MarkTrue(ts, TenantReachableCondition, ReasonTenantStatus, "tenant API reachable")
	conds := make([]metav1.Condition, len(tb.Status.Conditions))
	copy(conds, tb.Status.Conditions)
	if !equality.Semantic.DeepEqual(conds, ts.Status.TenantConditions) || ts.Status.TenantGeneration != tb.Generation {
		ts.Status.TenantConditions, ts.Status.TenantGeneration = conds, tb.Generation
		now := metav1.Now()
		ts.Status.LastReadTime = &now
	}
	return nil
}

// summarize is the only place a TenantSeed's Ready is decided: an error of
// its own, or else the tenant's own Ready verdict, as the tenant said it.
func summarize(ts *seederv1.TenantSeed, err error) {
	if err != nil {
		reason, terminal := outcome.Classify(err)
		conditions.MarkFalse(ts, ReadyCondition, reason, "%v", err)
		if terminal {
			conditions.MarkStalled(ts, reason, "%v", err)
		}
		return
	}
	conditions.Delete(ts, "Stalled")
	if s := conditions.Get(ts, SeededCondition); s == nil || s.Status != metav1.ConditionTrue {
		if s != nil {
			conditions.MarkFalse(ts, ReadyCondition, s.Reason, "%s", s.Message)
		}
		return
	}
	ready := meta.FindStatusCondition(ts.Status.TenantConditions, tenantv1.ReadyCondition)
	if ready == nil {
		conditions.MarkUnknown(ts, ReadyCondition, ReasonTenantStatus, "the tenant has not reported yet")
		return
	}
	if ready.ObservedGeneration < ts.Status.TenantGeneration {
		conditions.MarkUnknown(ts, ReadyCondition, ReasonTenantStatus,
			"the tenant has not reported on generation %d of its TenantBundle yet", ts.Status.TenantGeneration)
		return
	}
	msg := fmt.Sprintf("tenant: %s", ready.Message)
	if ready.Status == metav1.ConditionTrue {
		conditions.MarkTrue(ts, ReadyCondition, ReasonTenantStatus, "%s", msg)
		return
	}
	conditions.MarkFalse(ts, ReadyCondition, ready.Reason, "%s", msg)
}
