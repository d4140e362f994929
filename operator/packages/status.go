package packages

import (
	"context"
	"fmt"
	"slices"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// Conditions and reasons of a Package; the reasons Cozystack's Package
// controller uses keep their names.
const (
	ReadyCondition = meta.ReadyCondition

	ReasonSucceeded             = "ReconciliationSucceeded"
	ReasonProgressing           = "Progressing"
	ReasonPackageSourceNotFound = "PackageSourceNotFound"
	ReasonVariantNotFound       = "VariantNotFound"
	ReasonDependenciesNotReady  = "DependenciesNotReady"
	ReasonInvalidConfiguration  = "InvalidConfiguration"
	ReasonDependsOnFailed       = "DependsOnFailed"
	ReasonHelmReleaseFailed     = "HelmReleaseFailed"
	ReasonInternalError         = "InternalError"
	ReasonSourceRefNotSet       = "SourceRefNotSet"
	ReasonArtifactFailed        = "ArtifactFailed"
	ReasonChartInvalid          = "ChartInvalid"
	ReasonValuesRejected        = "ValuesRejected"

	// Not Cozystack's: a catalog app that renders privileged waits for a
	// confirmation, or is refused by the management side.
	ReasonPrivilegedNotConfirmed = "PrivilegedNotConfirmed"
	ReasonPrivilegedForbidden    = "PrivilegedForbidden"
)

// health is what the Package's HelmReleases say.
type health struct {
	waiting       string // what the Package waits for outside itself
	waitingReason string
	total         int
	pending       []string
	failed        *metav1.Condition // the first failing release's Ready condition
	failedOn      string
	stalled       bool
}

// settled says every release is Ready for what this reconcile applied.
func (h health) settled() bool {
	return h.waiting == "" && len(h.pending) == 0 && h.failed == nil
}

// observe reads the releases' conditions from the API server: this
// reconcile may just have changed their specs, and the cache may still hold
// the previous generation, observed and Ready.
func (r *Reconciler) observe(ctx context.Context, desired []*release) health {
	h := health{total: len(desired)}
	for _, rel := range desired {
		key := rel.HR.Namespace + "/" + rel.HR.Name
		hr := &helmv2.HelmRelease{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rel.HR), hr); err != nil {
			h.pending = append(h.pending, key)
			continue
		}
		switch state, ready := judge(hr, rel.Artifact.Digest); state {
		case releaseReady:
		case releaseFailed:
			if h.failed == nil {
				h.failed, h.failedOn = ready, key
				h.stalled = apimeta.IsStatusConditionTrue(hr.Status.Conditions, meta.StalledCondition)
			}
		default:
			h.pending = append(h.pending, key)
		}
	}
	return h
}

type releaseState int

const (
	releasePending releaseState = iota
	releaseReady
	releaseFailed
)

// judge says whether a HelmRelease has deployed the chart the operator
// published for it. A new chart changes the ExternalArtifact's status, not
// the HelmRelease's spec, so its generation does not move: until
// helm-controller has attempted the artifact's digest, its Ready (or the
// failure of a release action) is about the previous chart.
func judge(hr *helmv2.HelmRelease, digest string) (releaseState, *metav1.Condition) {
	ready := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
	if ready == nil || hr.Status.ObservedGeneration < hr.Generation {
		return releasePending, ready
	}
	attempted := hr.Status.LastAttemptedRevisionDigest == digest
	switch ready.Status {
	case metav1.ConditionTrue:
		if latest := hr.Status.History.Latest(); attempted && latest != nil && latest.OCIDigest == digest {
			return releaseReady, ready
		}
	case metav1.ConditionFalse:
		if ready.Reason == meta.ProgressingReason || ready.Reason == meta.DependencyNotReadyReason ||
			(!attempted && slices.Contains(releaseActionFailures, ready.Reason)) {
			return releasePending, ready
		}
		// Failures before any release action (values, source, artifact)
		// are about the current spec and artifact, attempted or not.
		return releaseFailed, ready
	}
	return releasePending, ready
}

// releaseActionFailures are the Ready reasons helm-controller sets after it
// has recorded the attempted chart's digest.
var releaseActionFailures = []string{
	helmv2.InstallFailedReason, helmv2.UpgradeFailedReason, helmv2.TestFailedReason,
	helmv2.RollbackFailedReason, helmv2.UninstallFailedReason,
}

// summarize is the only place a Package's Ready is decided (kstatus:
// terminal errors are Stalled, the rest Reconciling until Ready).
func summarize(pkg *cozyv1.Package, err error, h health) {
	reason, msg, stalled := "", "", false
	switch {
	case err != nil:
		reason, stalled = outcome.Classify(err)
		msg = err.Error()
	case h.waiting != "":
		reason, msg = h.waitingReason, h.waiting
	case h.failed != nil:
		// Flux's own reason, so that `kubectl get pkg` says what Flux says.
		reason, msg, stalled = h.failed.Reason, fmt.Sprintf("HelmRelease %s: %s", h.failedOn, h.failed.Message), h.stalled
	case len(h.pending) > 0:
		reason, msg = ReasonProgressing, "waiting for HelmRelease(s) "+strings.Join(h.pending, ", ")
	default:
		conditions.MarkTrue(pkg, ReadyCondition, ReasonSucceeded, "%d HelmRelease(s) ready", h.total)
		conditions.Delete(pkg, meta.StalledCondition)
		conditions.Delete(pkg, meta.ReconcilingCondition)
		return
	}
	conditions.MarkFalse(pkg, ReadyCondition, reason, "%s", msg)
	if stalled {
		conditions.MarkStalled(pkg, reason, "%s", msg)
		conditions.Delete(pkg, meta.ReconcilingCondition)
		return
	}
	conditions.Delete(pkg, meta.StalledCondition)
	conditions.MarkReconciling(pkg, reason, "%s", msg)
}
