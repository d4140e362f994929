package smoke

import (
	"context"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/world"
)

// bootTolerations are what a pod that must run before the cluster is
// initialised carries (our operator's list, minus the Cilium-specific one).
var bootTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists},
	{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists},
	{Key: world.TaintUninitialized, Operator: corev1.TolerationOpExists},
	{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
}

// tolerateEverything is what CNI and CCM DaemonSets carry.
var tolerateEverything = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}

func podSpec(image string, hostNetwork bool, tolerations []corev1.Toleration) corev1.PodSpec {
	return corev1.PodSpec{
		HostNetwork: hostNetwork,
		Tolerations: tolerations,
		Containers:  []corev1.Container{{Name: "main", Image: image}},
	}
}

func deployment(ns, name string, replicas int32, spec corev1.PodSpec, extraLabels map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	for k, v := range extraLabels {
		labels[k] = v
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

func daemonSet(ns, name string, spec corev1.PodSpec, extraLabels map[string]string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	for k, v := range extraLabels {
		labels[k] = v
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

func createNamespace(ctx context.Context, name string) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(ignoreAlreadyExists(k.Create(ctx, ns))).To(Succeed())
}

func ignoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func listPods(ctx context.Context, ns string, labels map[string]string) []corev1.Pod {
	var pods corev1.PodList
	Expect(k.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
	return pods.Items
}

func isPodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeCondition(node *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func hasTaint(node *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

func internalIP(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func getNode(ctx context.Context, name string) *corev1.Node {
	node := &corev1.Node{}
	Expect(k.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
	return node
}
