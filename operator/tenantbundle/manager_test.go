package tenantbundle

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestNodeChanged: a node update wakes the reconciler only when it can
// change the variant or the cloud effects, not when the CNI's rollout lifts
// a not-ready taint or a heartbeat moves the status.
func TestNodeChanged(t *testing.T) {
	node := func(providerID string, labels map[string]string, taints ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID}}
		for _, k := range taints {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule})
		}
		return n
	}
	ready := func(n *corev1.Node) *corev1.Node {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		return n
	}
	const notReady = "node.kubernetes.io/not-ready"
	tests := []struct {
		name     string
		old, new *corev1.Node
		want     bool
	}{
		{"status heartbeat", node("", nil), ready(node("", nil)), false},
		{"not-ready taint lifted by the CNI's rollout", node("", nil, notReady), node("", nil), false},
		{"uninitialized taint lifted by the cloud", node("fake://n", nil, uninitializedTaint), node("fake://n", nil), true},
		{"uninitialized taint added", node("", nil), node("", nil, uninitializedTaint), true},
		{"providerID set", node("", nil), node("fake://n", nil), true},
		{"label added", node("", nil), node("", map[string]string{"a": "b"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeChanged().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("nodeChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
