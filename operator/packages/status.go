package packages

import (
	"context"
	"fmt"
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

// observe reads the releases' conditions from the cache. A release counts
// as Ready only when helm-controller has seen its current generation.
func (r *Reconciler) observe(ctx context.Context, desired []*release) health {
	h := health{total: len(desired)}
	for _, rel := range desired {
		key := rel.HR.Namespace + "/" + rel.HR.Name
		hr := &helmv2.HelmRelease{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(rel.HR), hr); err != nil {
			h.pending = append(h.pending, key)
			continue
		}
		ready := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
		switch {
		case ready == nil || hr.Status.ObservedGeneration < hr.Generation:
			h.pending = append(h.pending, key)
		case ready.Status == metav1.ConditionTrue:
		case ready.Status == metav1.ConditionFalse && ready.Reason != meta.ProgressingReason && ready.Reason != meta.DependencyNotReadyReason:
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
