package world

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TaintUninitialized is what a kubelet with --cloud-provider=external
// registers with; a cloud controller manager removes it.
const TaintUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"

// Messages of the node conditions the network simulator sets, as a kubelet
// and a CNI agent would.
const (
	notReadyReason  = "KubeletNotReady"
	notReadyMessage = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"
	readyReason     = "KubeletReady"
	readyMessage    = "kubelet is posting ready status"
	noNetworkReason = "NetworkPluginNotReady"
	networkReason   = "NetworkPluginReady"
)

// AddNode registers a fake node the way a kubelet does and returns once kcm
// gave it a pod CIDR and kwok holds its Lease. With the network simulator on,
// the node starts NotReady and NetworkUnavailable with the matching NoSchedule
// taints, exactly as a real worker before its CNI runs.
func (w *World) AddNode(ctx context.Context, n NodeSpec) error {
	if n.Name == "" {
		return errors.New("node name is required")
	}
	ip, err := w.nodeIP(n.InternalIP)
	if err != nil {
		return err
	}
	networkSimulated := w.opts.CNIPodSelector != nil

	labels := map[string]string{
		corev1.LabelHostname:   n.Name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
	}
	maps.Copy(labels, n.Labels)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{FakeNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{ProviderID: n.ProviderID},
	}
	if networkSimulated {
		node.Spec.Taints = append(node.Spec.Taints,
			corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: corev1.TaintNodeNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule})
	}
	if n.Uninitialized {
		node.Spec.Taints = append(node.Spec.Taints,
			corev1.Taint{Key: TaintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
	node.Status = initialNodeStatus(n.Name, ip, !networkSimulated)

	created, err := w.Clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	// Status sent with a create is kept for Nodes today; update it anyway if
	// the API server dropped it, since kwok must never be the one to set it.
	if len(created.Status.Conditions) == 0 {
		created.Status = node.Status
		if _, err := w.Clientset.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("set status of node %s: %w", n.Name, err)
		}
	}

	watch := []*process{w.process(KubeControllerManager), w.process(Kwok)}
	return waitFor(ctx, "pod CIDR and kwok Lease of node "+n.Name, time.Minute, watch, func(ctx context.Context) (bool, error) {
		got, err := w.Clientset.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Spec.PodCIDR == "" {
			return false, nil
		}
		// The TaintNodesByCondition admission plugin registers every node
		// not-ready; for a node born Ready, wait for kcm to lift that so
		// callers can schedule at once.
		if !networkSimulated && hasTaint(got, corev1.TaintNodeNotReady) {
			return false, nil
		}
		return w.nodeLeaseExists(ctx, n.Name)
	})
}

// nodeIP hands out 192.0.2.x (TEST-NET-1): the addresses are only strings in
// API objects, and hostNetwork pods need one to get a podIP.
func (w *World) nodeIP(requested string) (string, error) {
	if requested != "" {
		if _, err := netip.ParseAddr(requested); err != nil {
			return "", fmt.Errorf("node InternalIP: %w", err)
		}
		return requested, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodeIPNext++
	if w.nodeIPNext > 240 {
		return "", errors.New("out of node addresses in 192.0.2.0/24")
	}
	return fmt.Sprintf("192.0.2.%d", 10+w.nodeIPNext), nil
}

func initialNodeStatus(name, ip string, ready bool) corev1.NodeStatus {
	now := metav1.Now()
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("16"),
		corev1.ResourceMemory:           resource.MustParse("64Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("200Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg,
			LastHeartbeatTime: now, LastTransitionTime: now}
	}
	conditions := []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
	}
	conditions = append(conditions, networkConditions(ready, now, "")...)
	return corev1.NodeStatus{
		Capacity:    resources,
		Allocatable: resources.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions:  conditions,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: ip},
			{Type: corev1.NodeHostName, Address: name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               name,
			SystemUUID:              name,
			BootID:                  name,
			KernelVersion:           "6.12.0-world",
			OSImage:                 "Simulated Linux (tenant-operator test world)",
			ContainerRuntimeVersion: "containerd://2.1.0-world",
			KubeletVersion:          "v1.37.2",
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		},
	}
}

// networkConditions are the Ready and NetworkUnavailable conditions for a
// node whose CNI is ready or not; cniPod names the pod that made it ready.
func networkConditions(ready bool, now metav1.Time, cniPod string) []corev1.NodeCondition {
	if ready {
		msg := "the CNI agent on this node is ready"
		if cniPod != "" {
			msg = "CNI agent pod " + cniPod + " is ready"
		}
		return []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: readyReason, Message: readyMessage,
				LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: networkReason, Message: msg,
				LastHeartbeatTime: now, LastTransitionTime: now},
		}
	}
	return []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: notReadyReason, Message: notReadyMessage,
			LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: noNetworkReason,
			Message: "no CNI agent pod is ready on this node", LastHeartbeatTime: now, LastTransitionTime: now},
	}
}
