// Package packages holds the Package controller: it turns a Package and the
// same-named PackageSource (cozystack.io/v1alpha1, Cozystack's semantics)
// into chart artifacts the operator serves and HelmReleases that the
// tenant's Flux reconciles. Unlike Cozystack's, a Package is Ready only when
// its HelmReleases are, and a dependent Package starts on the event that
// makes its dependencies Ready.
package packages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/artifacts"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/record"
	"github.com/cozystack/tenant-operator/internal/source"
	"github.com/cozystack/tenant-operator/internal/statuswrite"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// Labels and annotations, with Cozystack's names.
const (
	PackageLabel          = "cozystack.io/package"
	PrivilegedLabel       = "cozystack.io/privileged"
	SystemLabel           = "cozystack.io/system"
	SkipValuesAnnotation  = "operator.cozystack.io/skip-cozystack-values"
	ValuesFilesAnnotation = "cozyhr.cozystack.io/values-files"
	ValuesSecret          = "cozystack-values"
)

// Reconciler reconciles Packages.
type Reconciler struct {
	client.Client
	// APIReader reads Secrets, which the cache does not hold.
	APIReader client.Reader
	Apply     *apply.Engine
	Puller    *source.Puller
	Store     *artifacts.Store
	// Capabilities reads the cluster's version and served APIs, which the
	// privilege classification renders against, as helm-controller will.
	Capabilities func() (*helm.Capabilities, error)
	// Bundles holds the bundles and their addon catalogues: which Packages
	// are addons is read from them and the TenantBundle.
	Bundles fs.FS
	// PlatformNamespaces are those the platform's own components run in
	// (bundle.PlatformNamespaces).
	PlatformNamespaces sets.Set[string]
	// BootstrapReleases are the releases ("namespace/name") the bootstrap
	// tier installs itself (bundle.BootstrapReleases): no Package may
	// write a HelmRelease for one.
	BootstrapReleases sets.Set[string]
	// Events records the moment a Package becomes Stalled (a privileged
	// app held or refused, invalid configuration). Nil records nothing.
	Events events.EventRecorder

	charts   chartCache
	findings findingsCache
	// written is the status this process last wrote, per Package (see
	// statuswrite).
	written statuswrite.Memo[cozyv1.PackageStatus]
}

// Reconcile writes the Package's chart artifacts and HelmReleases and
// reports their health. The HelmReleases carry an owner reference, so
// deleting a Package uninstalls its releases through the garbage collector
// and helm-controller; the only finalizer is the operator's own, to take
// back the namespace labels the Package asked for, so a dead Flux cannot
// hang a deletion.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	pkg := &cozyv1.Package{}
	if err := r.Get(ctx, req.NamespacedName, pkg); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pkg.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, pkg)
	}
	// This controller is the only writer of Package status: one merge
	// patch per reconcile, none when nothing changed.
	before := pkg.DeepCopy()
	var health health
	defer func() {
		if v, ok := meta.ReconcileAnnotationValue(pkg.GetAnnotations()); ok {
			pkg.Status.LastHandledReconcileAt = v
		}
		summarize(pkg, retErr, health)
		record.Stalled(r.Events, pkg, conditions.Get(before, meta.StalledCondition), conditions.Get(pkg, meta.StalledCondition))
		if _, isTerminal := outcome.Classify(retErr); retErr == nil || isTerminal {
			pkg.Status.ObservedGeneration = pkg.Generation
		}
		if err := r.writeStatus(ctx, before, pkg); err != nil {
			retErr = outcome.AfterStatusWrite(retErr, client.IgnoreNotFound(err))
		}
	}()
	health, retErr = r.reconcile(ctx, pkg)
	return ctrl.Result{}, retErr
}

// writeStatus writes pkg's status unless nothing changed (see statuswrite):
// this controller is the only writer of Package status.
func (r *Reconciler) writeStatus(ctx context.Context, before, pkg *cozyv1.Package) error {
	return r.written.MergePatch(ctx, r.Client, before, pkg, packageStatus, client.FieldOwner(apply.FieldOwner))
}

func packageStatus(o client.Object) *cozyv1.PackageStatus { return &o.(*cozyv1.Package).Status }

func (r *Reconciler) reconcile(ctx context.Context, pkg *cozyv1.Package) (health, error) {
	ps, variant, err := r.variant(ctx, pkg)
	if errors.Is(err, errPackageSourceNotFound) {
		return health{waitingReason: ReasonPackageSourceNotFound, waiting: fmt.Sprintf("waiting for PackageSource %q", pkg.Name)}, nil
	}
	if err != nil {
		return health{}, err
	}
	if waiting := r.dependencies(ctx, pkg, variant); waiting != "" {
		return health{waitingReason: ReasonDependenciesNotReady, waiting: waiting}, nil
	}
	facts, err := r.tenant(ctx)
	if err != nil {
		return health{}, err
	}
	catalogApp := !facts.isAddon(pkg)
	art, err := r.artifact(ctx, ps)
	if err != nil {
		return health{}, err
	}
	if !catalogApp && art.Digest != facts.digest {
		// Addons are not gated: their charts must be the bytes the
		// TenantBundle verified, whatever the OCIRepository says now.
		return health{waitingReason: ReasonArtifactFailed, waiting: fmt.Sprintf(
			"waiting for the packages artifact the TenantBundle verified (%s); its OCIRepository gives %s", facts.digest, art.Digest)}, nil
	}
	desired, err := r.desired(ctx, pkg, ps, variant, art)
	if err != nil {
		return health{}, err
	}
	if err := r.classify(pkg, desired, facts.cluster, catalogApp); err != nil {
		return health{}, err
	}
	if err := gate(pkg, facts); err != nil {
		return health{}, err
	}
	markReleases(desired, catalogApp)
	if err := r.ensureNamespaces(ctx, pkg, desired); err != nil {
		return health{}, err
	}
	if catalogApp {
		if err := r.ensureIdentity(ctx, pkg, desired); err != nil {
			return health{}, err
		}
	}
	if err := r.ensureValues(ctx, desired, facts.cluster); err != nil {
		return health{}, err
	}
	if err := r.applyReleases(ctx, pkg, desired); err != nil {
		return health{}, err
	}
	if err := r.prune(ctx, pkg, desired); err != nil {
		return health{}, err
	}
	h := r.observe(ctx, desired)
	if catalogApp {
		if err := r.pruneIdentity(ctx, pkg, desired, h.settled()); err != nil {
			return h, err
		}
	}
	return h, nil
}

// finalize takes back the Package's namespace labels, then lets it go; its
// HelmReleases follow through the garbage collector, except a catalog
// app's: helm-controller uninstalls those as the app's identity, so they
// are deleted first and the identity only once they are gone.
func (r *Reconciler) finalize(ctx context.Context, pkg *cozyv1.Package) error {
	if !controllerutil.ContainsFinalizer(pkg, NamespaceFinalizer) {
		return nil
	}
	var hrs helmv2.HelmReleaseList
	if err := r.List(ctx, &hrs, client.MatchingLabels{PackageLabel: pkg.Name, CatalogAppLabel: "true"}); err != nil {
		return outcome.Retry(ReasonInternalError, err)
	}
	if len(hrs.Items) > 0 {
		for i := range hrs.Items {
			if hrs.Items[i].DeletionTimestamp.IsZero() {
				if err := r.Delete(ctx, &hrs.Items[i]); client.IgnoreNotFound(err) != nil {
					return outcome.Retry(ReasonInternalError, err)
				}
			}
		}
		// Their removal (a watched event) reconciles this Package again.
		return nil
	}
	if err := r.pruneIdentity(ctx, pkg, nil, true); err != nil {
		return err
	}
	if err := r.releaseNamespaces(ctx, pkg.Name, nil); err != nil {
		return err
	}
	before := pkg.DeepCopy()
	controllerutil.RemoveFinalizer(pkg, NamespaceFinalizer)
	return client.IgnoreNotFound(r.Patch(ctx, pkg, client.MergeFrom(before), client.FieldOwner(apply.FieldOwner)))
}
