package tenantbundle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

func TestRoutine(t *testing.T) {
	base := func() tenantv1.TenantBundleStatus {
		return tenantv1.TenantBundleStatus{ObservedGeneration: 1, ArtifactDigest: "sha256:a",
			Conditions: []metav1.Condition{{Type: tenantv1.ReadyCondition, Status: metav1.ConditionFalse,
				Reason: tenantv1.ReasonComponentsNotReady, Message: "cilium: 1/3 ready", ObservedGeneration: 1},
				{Type: tenantv1.NetworkReadyCondition, Status: metav1.ConditionFalse,
					Reason: tenantv1.ReasonComponentsNotReady, Message: "cilium: 1/3 ready", ObservedGeneration: 1}},
			Components: []tenantv1.ComponentStatus{{Name: "cilium", Tier: "network", Revision: 1, Message: "1/3 ready"}}}
	}
	tests := []struct {
		name   string
		change func(*tenantv1.TenantBundleStatus)
		want   bool
	}{
		{"messages only", func(s *tenantv1.TenantBundleStatus) {
			s.Conditions[0].Message, s.Conditions[1].Message = "cilium: 2/3 ready", "cilium: 2/3 ready"
			s.Components[0].Message = "2/3 ready"
		}, true},
		{"a component Ready", func(s *tenantv1.TenantBundleStatus) { s.Components[0].Ready = true }, true},
		{"a component's revision", func(s *tenantv1.TenantBundleStatus) { s.Components[0].Revision = 2 }, true},
		{"a component added", func(s *tenantv1.TenantBundleStatus) {
			s.Components = append(s.Components, tenantv1.ComponentStatus{Name: "coredns"})
		}, true},
		{"Ready", func(s *tenantv1.TenantBundleStatus) {
			s.Conditions[0].Status, s.Conditions[0].Reason = metav1.ConditionTrue, tenantv1.ReasonSucceeded
		}, false},
		{"a condition's status", func(s *tenantv1.TenantBundleStatus) {
			s.Conditions[1].Status, s.Conditions[1].Reason = metav1.ConditionTrue, tenantv1.ReasonComponentsNotReady
		}, false},
		{"a condition's reason", func(s *tenantv1.TenantBundleStatus) { s.Conditions[0].Reason = "InstallFailed" }, false},
		{"a condition added", func(s *tenantv1.TenantBundleStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: tenantv1.StalledCondition, Status: metav1.ConditionTrue})
		}, false},
		{"observed generation", func(s *tenantv1.TenantBundleStatus) { s.ObservedGeneration = 2 }, false},
		{"a condition's observed generation", func(s *tenantv1.TenantBundleStatus) { s.Conditions[0].ObservedGeneration = 2 }, false},
		{"artifact", func(s *tenantv1.TenantBundleStatus) { s.ArtifactDigest = "sha256:b" }, false},
		{"handled reconcile request", func(s *tenantv1.TenantBundleStatus) { s.LastHandledReconcileAt = "now" }, false},
		{"the first status", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := base(), base()
			if tt.change == nil {
				before = tenantv1.TenantBundleStatus{}
			} else {
				tt.change(&after)
			}
			if got := routine(before, after); got != tt.want {
				t.Fatalf("routine = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPacer(t *testing.T) {
	a, b := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}
	start := time.Unix(1000, 0)
	tests := []struct {
		name  string
		every time.Duration
		wrote []types.NamespacedName
		after time.Duration
		want  time.Duration
	}{
		{"never written: at once", time.Second, nil, 0, 0},
		{"just written: the rest of the interval", time.Second, []types.NamespacedName{a}, 300 * time.Millisecond, 700 * time.Millisecond},
		{"interval over: at once", time.Second, []types.NamespacedName{a}, 1500 * time.Millisecond, 0},
		{"another object's write: at once", time.Second, []types.NamespacedName{b}, 0, 0},
		{"pacing off", 0, []types.NamespacedName{a}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := start
			p := &pacer{every: tt.every, now: func() time.Time { return now }}
			for _, k := range tt.wrote {
				p.wrote(k)
			}
			now = now.Add(tt.after)
			if got := p.hold(a); got != tt.want {
				t.Fatalf("hold = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("forgotten: at once", func(t *testing.T) {
		p := &pacer{every: time.Second}
		p.wrote(a)
		p.forget(a)
		if got := p.hold(a); got != 0 {
			t.Fatalf("hold = %v, want 0", got)
		}
	})
}
