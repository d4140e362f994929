package readiness

import (
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// TestKstatusInputKeepsTheVerdict: the reduced workload kstatus is computed
// on gives the verdict and message of the whole object, in every state a
// rollout passes through.
func TestKstatusInputKeepsTheVerdict(t *testing.T) {
	meta := func(gen int64) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "u", Generation: gen,
			Labels: map[string]string{"app": "w"}, Annotations: map[string]string{"meta.helm.sh/release-name": "w"}}
	}
	deleting := meta(1)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	deleting.Finalizers = []string{"keep"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "w"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img", Args: []string{"--a"}}}}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "w"}}
	deploy := func(m metav1.ObjectMeta, s appsv1.DeploymentStatus) client.Object {
		return &appsv1.Deployment{ObjectMeta: m, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: selector,
			Template: template, ProgressDeadlineSeconds: ptr.To[int32](600)}, Status: s}
	}
	progressing := func(reason string) []appsv1.DeploymentCondition {
		return []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: reason},
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
	}
	ds := func(gen int64, s appsv1.DaemonSetStatus) client.Object {
		return &appsv1.DaemonSet{ObjectMeta: meta(gen), Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template}, Status: s}
	}
	sts := func(strategy appsv1.StatefulSetUpdateStrategy, s appsv1.StatefulSetStatus) client.Object {
		return &appsv1.StatefulSet{ObjectMeta: meta(2), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: selector,
			Template: template, UpdateStrategy: strategy,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}, Status: s}
	}
	partition := appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}}
	tests := []struct {
		name string
		obj  client.Object
	}{
		{"deployment not yet observed", deploy(meta(2), appsv1.DeploymentStatus{ObservedGeneration: 1})},
		{"deployment rolling out", deploy(meta(1), appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 1,
			Conditions: progressing("ReplicaSetUpdated")})},
		{"deployment available", deploy(meta(1), appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2,
			ReadyReplicas: 2, AvailableReplicas: 2, Conditions: progressing("NewReplicaSetAvailable")})},
		{"deployment past its deadline", deploy(meta(1), appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}})},
		{"deployment being deleted", deploy(deleting, appsv1.DeploymentStatus{ObservedGeneration: 1})},
		{"daemonset scheduling", ds(1, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 1})},
		{"daemonset not ready", ds(1, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
			UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 2})},
		{"daemonset ready", ds(1, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
			UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3})},
		{"statefulset partitioned rollout", sts(partition, appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3,
			CurrentReplicas: 1, UpdatedReplicas: 2, CurrentRevision: "a", UpdateRevision: "b"})},
		{"statefulset on delete", sts(appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3})},
		{"statefulset updating", sts(appsv1.StatefulSetUpdateStrategy{}, appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3,
			ReadyReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "a", UpdateRevision: "b"})},
		{"statefulset rolled out", sts(appsv1.StatefulSetUpdateStrategy{}, appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3,
			ReadyReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "b", UpdateRevision: "b"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			full := &unstructured.Unstructured{Object: raw}
			gvk, err := apiutil.GVKForObject(tt.obj, clientgoscheme.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			full.SetGroupVersionKind(gvk)
			want, err := status.Compute(full)
			if err != nil {
				t.Fatal(err)
			}
			got, err := compute(tt.obj, full)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != want.Status || got.Message != want.Message {
				t.Errorf("reduced: %s %q, whole object: %s %q", got.Status, got.Message, want.Status, want.Message)
			}
			changed, err := statusOf(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if changed.Status != want.Status || changed.Message != want.Message {
				t.Errorf("statusOf: %s %q, whole object: %s %q", changed.Status, changed.Message, want.Status, want.Message)
			}
		})
	}
}
