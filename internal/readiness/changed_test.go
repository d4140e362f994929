package readiness

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestChanged: an update wakes the operator to decide only when the spec or
// the kstatus verdict moved, to refresh its report when only the message
// did, and not at all for churn that moves neither.
func TestChanged(t *testing.T) {
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "w"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
	ds := func(gen int64, ready int32, rv string) client.Object {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Generation: gen, ResourceVersion: rv},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "w"}},
				Template: template},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: gen, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
				UpdatedNumberScheduled: 3, NumberAvailable: ready, NumberReady: ready},
		}
	}
	tests := []struct {
		name     string
		old, new client.Object
		want     Change
	}{
		{"a resync of the same object", ds(1, 1, "5"), ds(1, 1, "5"), Unchanged},
		{"status written again unchanged", ds(1, 1, "5"), ds(1, 1, "6"), Unchanged},
		{"a counter of the rollout moved", ds(1, 1, "5"), ds(1, 2, "6"), Progress},
		{"the rollout finished", ds(1, 2, "5"), ds(1, 3, "6"), Verdict},
		{"a ready workload lost a pod", ds(1, 3, "5"), ds(1, 2, "6"), Verdict},
		{"the spec changed", ds(1, 3, "5"), ds(2, 3, "6"), Verdict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Changed(tt.old, tt.new); got != tt.want {
				t.Errorf("Changed = %d, want %d", got, tt.want)
			}
		})
	}
}
