// Package tenantbundle holds the TenantBundle controller: it reads the
// bundle and the cluster facts, pulls the packages artifact and hands the
// bootstrap tiers to the bootstrap engine, then summarises what it saw.
package tenantbundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/fluxcd/pkg/runtime/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/record"
	"github.com/cozystack/tenant-operator/internal/source"
	"github.com/cozystack/tenant-operator/internal/statuswrite"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/bootstrap"
)

// requestedAtAnnotation asks for a reconcile, with Flux's name for it.
const requestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"

// Reconciler reconciles TenantBundles.
type Reconciler struct {
	client.Client
	// APIReader reads what the cache does not hold (Secrets).
	APIReader client.Reader
	Bundles   fs.FS
	Puller    *source.Puller
	Engine    *bootstrap.Engine
	// Variants are the loaded variant definitions, by name.
	Variants map[string]*bundle.Variant
	// KubeMinor reports the cluster's Kubernetes minor version.
	KubeMinor func() (string, error)
	// ProgressInterval is the least time between two status writes that
	// only report progress (see routine); 0 writes each at once.
	ProgressInterval time.Duration
	// Events records what a reconcile did (a component installed,
	// upgraded, unlocked, corrected) and the moment it Stalled; none at
	// idle. Nil records nothing.
	Events events.EventRecorder

	charts chartCache
	pace   *pacer
	// written is the status this process last wrote, per TenantBundle (see
	// statuswrite).
	written statuswrite.Memo[tenantv1.TenantBundleStatus]
	// informers tells the event handlers whether the TenantBundle cache
	// has synced (see allBundles).
	informers cache.Informers
	// workloadEvents counts the workload events that queued a reconcile
	// (see report).
	workloadEvents atomic.Uint64
}

// Reconcile brings the cluster to what the TenantBundle describes. It has no
// finalizer on purpose: deleting the TenantBundle must never take the
// network down, so deletion removes nothing.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &tenantv1.TenantBundle{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.pace.forget(req.NamespacedName)
			r.written.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if obj.Spec.Suspend {
		ctrl.LoggerFrom(ctx).Info("reconciliation suspended")
		return ctrl.Result{}, nil
	}

	before := obj.DeepCopy()
	events := r.workloadEvents.Load()
	var notReady string
	defer func() {
		result, retErr = r.report(ctx, before, obj, notReady, retErr, events)
	}()

	notReady, retErr = r.reconcile(ctx, obj)
	return ctrl.Result{}, retErr
}

// reconcile returns a summary of what is not Ready yet ("" when all is).
// Waiting is not an error: the watches on workloads bring the next event.
func (r *Reconciler) reconcile(ctx context.Context, obj *tenantv1.TenantBundle) (string, error) {
	p, err := r.makePlan(ctx, obj)
	if err != nil {
		return "", err
	}
	art, err := r.pull(ctx, obj)
	if err != nil {
		conditions.MarkFalse(obj, tenantv1.SourceReadyCondition, tenantv1.ReasonArtifactFailed, "%s", err.Error())
		return "", err
	}
	obj.Status.ArtifactDigest = art.Digest
	conditions.MarkTrue(obj, tenantv1.SourceReadyCondition, tenantv1.ReasonSucceeded, "pulled %s", art.Digest)

	comps, err := r.components(ctx, obj, p.components, p.facts, art)
	if err != nil {
		return "", err
	}
	results := r.Engine.Run(ctx, comps)
	r.recordActions(obj, results)
	charts := map[string]chartInfo{}
	for _, c := range comps {
		charts[c.Def.Name] = chartInfo{ref: c.Def.Chart.String(), note: c.Chart.Note}
	}
	setComponents(obj, results, charts)
	setTierCondition(obj, tenantv1.NetworkReadyCondition, bundle.TierNetwork, results)

	effects := ""
	if p.variant != nil {
		effects = waitingForEffects(p.variant, p.nodes)
	}
	setCloudCondition(obj, p.variant, results, effects)
	notReady := bootstrap.Summary(results)
	if effects != "" {
		notReady = strings.TrimPrefix(notReady+"; cloud: "+effects, "; ")
	}
	if p.variant == nil && p.variantErr == nil {
		notReady = strings.TrimPrefix(notReady+"; variant: "+conditions.GetMessage(obj, tenantv1.VariantResolvedCondition), "; ")
	}
	if p.variantErr != nil {
		return notReady, p.variantErr
	}
	if err := resultsError(results); err != nil {
		return notReady, err
	}
	// Addons are not part of Ready (see AddonsReady, written by the addons
	// controller), but a refused addon choice is a spec that cannot be
	// carried out: Stalled.
	if c := conditions.Get(obj, tenantv1.AddonsReadyCondition); c != nil && tenantv1.IsAddonRefusal(c.Reason) && c.ObservedGeneration == obj.Generation {
		return notReady, outcome.Terminal(c.Reason, "%s", c.Message)
	}
	return notReady, nil
}

// recordActions records an Event for every step a component went through.
func (r *Reconciler) recordActions(obj *tenantv1.TenantBundle, results []bootstrap.Result) {
	if r.Events == nil {
		return
	}
	for _, res := range results {
		// Related: the revision's storage Secret. Events of one object,
		// reason and related object are folded into one series, so the
		// components' events would otherwise merge.
		revision := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: res.ReleaseNamespace,
			Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", res.ReleaseName, res.Revision)}}
		for _, a := range res.Actions {
			r.Events.Eventf(obj, revision, corev1.EventTypeNormal, string(a), string(a),
				"component %s: %s (revision %d, chart %s)", res.Name, actionNote[a], res.Revision, res.ChartVersion)
		}
	}
}

var actionNote = map[bootstrap.Action]string{
	bootstrap.Installed:      "installed",
	bootstrap.Upgraded:       "upgraded",
	bootstrap.Unlocked:       "the release its dead writer left pending was marked failed",
	bootstrap.DriftCorrected: "deleted or edited objects re-applied from the deployed revision",
}

// resultsError turns component failures into one error: terminal when a
// component's chart or values are wrong (naming the field to fix),
// otherwise retried with backoff.
func resultsError(results []bootstrap.Result) error {
	var errs []error
	for _, res := range results {
		if res.Err == nil {
			continue
		}
		if errors.Is(res.Err, helm.ErrValuesRejected) {
			return outcome.Terminal(tenantv1.ReasonValuesRejected, "spec.components.%s.values: %v", res.Name, res.Err)
		}
		errs = append(errs, res.Err)
	}
	if len(errs) == 0 {
		return nil
	}
	return outcome.Retry(tenantv1.ReasonInstallFailed, errors.Join(errs...))
}

// report summarises the reconcile into the status and writes it, in one
// request: a patch helper that writes conditions and the rest of status
// separately lets a watcher see Ready=True next to a stale component list.
// Writes that only report progress are left out while a newer report is
// already on its way, and spaced by the pacer otherwise.
func (r *Reconciler) report(ctx context.Context, before, obj *tenantv1.TenantBundle, notReady string, retErr error, events uint64) (ctrl.Result, error) {
	if v, ok := obj.GetAnnotations()[requestedAtAnnotation]; ok {
		obj.Status.LastHandledReconcileAt = v
	}
	setWaitingTiers(obj)
	summarize(obj, retErr, notReady)
	record.Stalled(r.Events, obj, conditions.Get(before, tenantv1.StalledCondition), conditions.Get(obj, tenantv1.StalledCondition))
	if _, isTerminal := outcome.Classify(retErr); retErr == nil || isTerminal {
		obj.Status.ObservedGeneration = obj.Generation
	}
	key := client.ObjectKeyFromObject(obj)
	if r.written.Unchanged(key, obj.UID, ownStatus(before.Status), ownStatus(obj.Status)) {
		return ctrl.Result{}, retErr // nothing new to say: no write
	}
	if retErr == nil && routine(before.Status, obj.Status) {
		if r.workloadEvents.Load() != events {
			// A workload event came in meanwhile and queued the next
			// reconcile, which reports newer progress.
			return ctrl.Result{}, nil
		}
		if wait := r.pace.hold(key); wait > 0 {
			// Nothing else may come: the requeue writes it then.
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	stored, err := r.writeStatus(ctx, obj.Name, ownStatus(obj.Status))
	if err != nil {
		return ctrl.Result{}, outcome.AfterStatusWrite(retErr, client.IgnoreNotFound(err))
	}
	r.written.Wrote(key, obj.UID, ownStatus(stored))
	r.pace.wrote(key)
	return ctrl.Result{}, retErr
}

// ownStatus is the part of a status this controller writes: all of it but
// AddonsReady and CatalogReady once their controllers wrote them. Those
// controllers own these entries of the conditions map from then on (they
// force the ownership over), and a stale copy read from the cache must not
// overwrite them.
func ownStatus(s tenantv1.TenantBundleStatus) tenantv1.TenantBundleStatus {
	own := *s.DeepCopy()
	own.Conditions = slices.DeleteFunc(own.Conditions, ownedByTierController)
	return own
}

// writeStatus applies status (see ownStatus) with server-side apply as the
// operator and returns the status as the API server stored it: condition
// times to the second, which is how the cache will return it.
func (r *Reconciler) writeStatus(ctx context.Context, name string, status tenantv1.TenantBundleStatus) (tenantv1.TenantBundleStatus, error) {
	patch := &tenantv1.TenantBundle{}
	patch.APIVersion, patch.Kind = tenantv1.GroupVersion.String(), "TenantBundle"
	patch.Name = name
	patch.Status = *status.DeepCopy()
	u, err := apply.StatusPatch(patch)
	if err != nil {
		return tenantv1.TenantBundleStatus{}, err
	}
	if err := r.Status().Patch(ctx, u, client.Apply, client.FieldOwner(apply.FieldOwner), client.ForceOwnership); err != nil {
		return tenantv1.TenantBundleStatus{}, err
	}
	stored := &tenantv1.TenantBundle{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, stored); err != nil {
		return tenantv1.TenantBundleStatus{}, err
	}
	return stored.Status, nil
}
