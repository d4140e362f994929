package tenantbundle

import (
	"errors"
	"slices"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/tenant-operator/internal/outcome"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/bootstrap"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name                        string
		err                         error
		notReady                    string
		ready, stalled, reconciling metav1.ConditionStatus
		reason                      string
	}{
		{"all ready", nil, "", metav1.ConditionTrue, "", "", tenantv1.ReasonSucceeded},
		{"waiting for workloads", nil, "coredns: 0/2 ready", metav1.ConditionFalse, "", metav1.ConditionTrue, tenantv1.ReasonComponentsNotReady},
		{"terminal", outcome.Terminal(tenantv1.ReasonValuesRejected, "spec.components.x.values: bad"), "", metav1.ConditionFalse, metav1.ConditionTrue, "", tenantv1.ReasonValuesRejected},
		{"retrying", outcome.Retry(tenantv1.ReasonArtifactFailed, errors.New("registry down")), "", metav1.ConditionFalse, "", metav1.ConditionTrue, tenantv1.ReasonArtifactFailed},
		{"unclassified", errors.New("boom"), "", metav1.ConditionFalse, "", metav1.ConditionTrue, "ReconciliationFailed"},
	}
	status := func(obj *tenantv1.TenantBundle, typ string) metav1.ConditionStatus {
		if c := conditions.Get(obj, typ); c != nil {
			return c.Status
		}
		return ""
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &tenantv1.TenantBundle{}
			// Leftovers of an earlier reconcile must not survive.
			conditions.MarkStalled(obj, "Old", "old")
			conditions.MarkReconciling(obj, "Old", "old")
			summarize(obj, tt.err, tt.notReady)
			if got := status(obj, tenantv1.ReadyCondition); got != tt.ready {
				t.Errorf("Ready = %q, want %q", got, tt.ready)
			}
			if got := status(obj, tenantv1.StalledCondition); got != tt.stalled {
				t.Errorf("Stalled = %q, want %q", got, tt.stalled)
			}
			if got := status(obj, tenantv1.ReconcilingCondition); got != tt.reconciling {
				t.Errorf("Reconciling = %q, want %q", got, tt.reconciling)
			}
			if got := conditions.GetReason(obj, tenantv1.ReadyCondition); got != tt.reason {
				t.Errorf("Ready reason = %q, want %q", got, tt.reason)
			}
		})
	}
}

func TestSetTierCondition(t *testing.T) {
	ready := bootstrap.Result{Name: "cilium", Tier: "network", State: bootstrap.StateReady}
	coming := bootstrap.Result{Name: "coredns", Tier: "network", State: bootstrap.StateProgressing, Message: "0/2"}
	other := bootstrap.Result{Name: "csi", Tier: "cloud", State: bootstrap.StateBlocked}
	tests := []struct {
		name    string
		results []bootstrap.Result
		want    metav1.ConditionStatus
	}{
		{"all ready", []bootstrap.Result{ready, other}, metav1.ConditionTrue},
		{"one coming up", []bootstrap.Result{ready, coming}, metav1.ConditionFalse},
		{"no component in the tier", []bootstrap.Result{other}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &tenantv1.TenantBundle{}
			setTierCondition(obj, tenantv1.NetworkReadyCondition, "network", tt.results)
			var got metav1.ConditionStatus
			if c := conditions.Get(obj, tenantv1.NetworkReadyCondition); c != nil {
				got = c.Status
			}
			if got != tt.want {
				t.Fatalf("NetworkReady = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSetWaitingTiers(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	networkTrue := cond(tenantv1.NetworkReadyCondition, metav1.ConditionTrue, tenantv1.ReasonSucceeded)
	networkFalse := cond(tenantv1.NetworkReadyCondition, metav1.ConditionFalse, tenantv1.ReasonComponentsNotReady)
	addonsTrue := cond(tenantv1.AddonsReadyCondition, metav1.ConditionTrue, tenantv1.ReasonSucceeded)
	addonsWaiting := cond(tenantv1.AddonsReadyCondition, metav1.ConditionUnknown, tenantv1.ReasonWaitingForNetwork)
	type want struct {
		status  metav1.ConditionStatus
		reason  string
		written bool // kept in the TenantBundle controller's status write
	}
	tests := []struct {
		name   string
		given  []metav1.Condition
		addons want
	}{
		{"network coming up, no addon controller yet", []metav1.Condition{networkFalse},
			want{metav1.ConditionUnknown, tenantv1.ReasonWaitingForNetwork, true}},
		{"no network condition yet", nil,
			want{metav1.ConditionUnknown, tenantv1.ReasonWaitingForNetwork, true}},
		{"network Ready: the addon controller's turn", []metav1.Condition{networkTrue, addonsWaiting},
			want{metav1.ConditionUnknown, tenantv1.ReasonWaitingForNetwork, true}},
		{"network Ready, addons reported", []metav1.Condition{networkTrue, addonsTrue},
			want{metav1.ConditionTrue, tenantv1.ReasonSucceeded, false}},
		{"network regressed after the addon controller wrote", []metav1.Condition{networkFalse, addonsTrue},
			want{metav1.ConditionTrue, tenantv1.ReasonSucceeded, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &tenantv1.TenantBundle{Status: tenantv1.TenantBundleStatus{Conditions: slices.Clone(tt.given)}}
			setWaitingTiers(obj)
			c := conditions.Get(obj, tenantv1.AddonsReadyCondition)
			if c == nil {
				t.Fatal("AddonsReady absent")
			}
			if c.Status != tt.addons.status || c.Reason != tt.addons.reason {
				t.Fatalf("AddonsReady = %s/%s, want %s/%s", c.Status, c.Reason, tt.addons.status, tt.addons.reason)
			}
			if written := !ownedByTierController(*c); written != tt.addons.written {
				t.Fatalf("in the status write: %v, want %v", written, tt.addons.written)
			}
			if conditions.IsTrue(obj, tenantv1.NetworkReadyCondition) {
				return
			}
			if c := conditions.Get(obj, tenantv1.CatalogReadyCondition); c == nil || c.Reason != tenantv1.ReasonWaitingForNetwork {
				t.Fatalf("CatalogReady = %+v, want waiting for the network", c)
			}
		})
	}
}
