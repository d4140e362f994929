package seeder

import (
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seederv1 "github.com/cozystack/tenant-operator/operator/apis/seeder/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

func TestSummarizeMirrorsOnlyACurrentVerdict(t *testing.T) {
	tests := []struct {
		name             string
		tenantReady      *metav1.Condition
		tenantGeneration int64
		want             metav1.ConditionStatus
	}{
		{"not reported yet", nil, 1, metav1.ConditionUnknown},
		{"Ready at the current generation", &metav1.Condition{Status: metav1.ConditionTrue, ObservedGeneration: 2}, 2, metav1.ConditionTrue},
		{"Ready about the previous spec", &metav1.Condition{Status: metav1.ConditionTrue, ObservedGeneration: 1}, 2, metav1.ConditionUnknown},
		{"failing at the current generation", &metav1.Condition{Status: metav1.ConditionFalse, Reason: "ValuesRejected", ObservedGeneration: 2}, 2, metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &seederv1.TenantSeed{}
			conditions.MarkTrue(ts, SeededCondition, ReasonSeeded, "seeded")
			ts.Status.TenantGeneration = tt.tenantGeneration
			if tt.tenantReady != nil {
				c := *tt.tenantReady
				c.Type = tenantv1.ReadyCondition
				ts.Status.TenantConditions = []metav1.Condition{c}
			}
			summarize(ts, nil)
			if got := conditions.Get(ts, ReadyCondition); got == nil || got.Status != tt.want {
				t.Fatalf("Ready = %v, want %s", got, tt.want)
			}
		})
	}
}
