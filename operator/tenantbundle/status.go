package tenantbundle

import (
	"slices"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/outcome"

	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/bootstrap"
)

// chartInfo is what the status says of a component's chart.
type chartInfo struct {
	ref  string
	note string // why this version, when it is a fallback
}

// setComponents records what was observed of each component.
func setComponents(obj *tenantv1.TenantBundle, results []bootstrap.Result, charts map[string]chartInfo) {
	obj.Status.Components = obj.Status.Components[:0]
	for _, r := range results {
		msg := r.Message
		if note := charts[r.Name].note; note != "" {
			msg = strings.TrimPrefix(msg+"; "+note, "; ")
		}
		obj.Status.Components = append(obj.Status.Components, tenantv1.ComponentStatus{
			Name: r.Name, Tier: r.Tier, Chart: charts[r.Name].ref, Version: r.ChartVersion,
			Revision: r.Revision, Ready: r.Ready(), Message: msg,
		})
	}
}

// setTierCondition sets a tier's condition from its components' results.
func setTierCondition(obj *tenantv1.TenantBundle, condition, tier string, results []bootstrap.Result) {
	var tierResults []bootstrap.Result
	for _, r := range results {
		if r.Tier == tier {
			tierResults = append(tierResults, r)
		}
	}
	if len(tierResults) == 0 {
		conditions.Delete(obj, condition)
		return
	}
	if msg := bootstrap.Summary(tierResults); msg != "" {
		conditions.MarkFalse(obj, condition, tenantv1.ReasonComponentsNotReady, "%s", msg)
		return
	}
	conditions.MarkTrue(obj, condition, tenantv1.ReasonSucceeded, "%d component(s) ready", len(tierResults))
}

// flux tiers are the tiers whose controllers start once NetworkReady is
// True (addons.Starter); each writes its own condition.
var fluxTierConditions = []string{tenantv1.AddonsReadyCondition, tenantv1.CatalogReadyCondition}

// setWaitingTiers reports the Flux tiers as Unknown until the network tier
// is Ready. Their controllers only start then, and an absent condition
// would leave `kubectl wait --for=condition=AddonsReady` and a reader of
// the status guessing. Once a tier's controller has written its condition,
// it is left to that controller, even if the network tier regresses.
func setWaitingTiers(obj *tenantv1.TenantBundle) {
	if conditions.IsTrue(obj, tenantv1.NetworkReadyCondition) {
		return
	}
	for _, t := range fluxTierConditions {
		if c := conditions.Get(obj, t); c == nil || c.Reason == tenantv1.ReasonWaitingForNetwork {
			conditions.MarkUnknown(obj, t, tenantv1.ReasonWaitingForNetwork, "starts once the network tier is Ready")
		}
	}
}

// ownedByTierController says whether a condition is a Flux tier's own,
// which the TenantBundle controller's status write must leave out.
func ownedByTierController(c metav1.Condition) bool {
	return slices.Contains(fluxTierConditions, c.Type) && c.Reason != tenantv1.ReasonWaitingForNetwork
}

// summarize is the only place Ready is decided. notReady is the message of
// components still coming up ("" when all are Ready). kstatus: a terminal
// error is Stalled, anything else that is not Ready is Reconciling.
func summarize(obj *tenantv1.TenantBundle, err error, notReady string) {
	switch {
	case err != nil:
		reason, isTerminal := outcome.Classify(err)
		conditions.MarkFalse(obj, tenantv1.ReadyCondition, reason, "%s", err.Error())
		if isTerminal {
			conditions.MarkStalled(obj, reason, "%s", err.Error())
		} else {
			conditions.Delete(obj, tenantv1.StalledCondition)
			conditions.MarkReconciling(obj, "ProgressingWithRetry", "%s", err.Error())
		}
	case notReady != "":
		conditions.MarkFalse(obj, tenantv1.ReadyCondition, tenantv1.ReasonComponentsNotReady, "%s", notReady)
		conditions.Delete(obj, tenantv1.StalledCondition)
		conditions.MarkReconciling(obj, tenantv1.ReasonProgressing, "%s", notReady)
	default:
		conditions.MarkTrue(obj, tenantv1.ReadyCondition, tenantv1.ReasonSucceeded, "all components ready")
		conditions.Delete(obj, tenantv1.StalledCondition)
		conditions.Delete(obj, tenantv1.ReconcilingCondition)
	}
}

// setCloudCondition sets CloudReady from the variant's tenant-side
// components and the effects still awaited on the nodes.
func setCloudCondition(obj *tenantv1.TenantBundle, v *bundle.Variant, results []bootstrap.Result, effects string) {
	if v == nil {
		conditions.MarkUnknown(obj, tenantv1.CloudReadyCondition, tenantv1.ReasonVariantUnknown, "the variant is not resolved yet")
		return
	}
	var cloud []bootstrap.Result
	for _, r := range results {
		if r.Tier == bundle.TierCloud {
			cloud = append(cloud, r)
		}
	}
	notReady := bootstrap.Summary(cloud)
	switch {
	case notReady != "":
		conditions.MarkFalse(obj, tenantv1.CloudReadyCondition, tenantv1.ReasonComponentsNotReady, "%s", strings.TrimSuffix(notReady+"; "+effects, "; "))
	case effects != "":
		conditions.MarkFalse(obj, tenantv1.CloudReadyCondition, tenantv1.ReasonWaitingForCloud, "%s", effects)
	default:
		conditions.MarkTrue(obj, tenantv1.CloudReadyCondition, tenantv1.ReasonSucceeded, "variant %s: %d tenant-side component(s) ready", v.Name, len(cloud))
	}
}
