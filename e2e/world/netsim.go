package world

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

const podNodeIndex = "spec.nodeName"

// netSim is the node-network simulator. Per node it decides "the CNI is
// ready" (a Ready, non-terminating pod matching the CNI selector runs on it)
// and from that:
//   - the node's Ready and NetworkUnavailable conditions (kcm's node lifecycle
//     controller then adds or lifts the matching taints, as in a real cluster);
//   - which pods get a sandbox: hostNetwork pods at once, pod-network pods only
//     while the CNI is ready. kwok makes a pod Running/Ready only with one.
//
// With no selector the network is always ready and only pods get sandboxes.
type netSim struct {
	w        *World
	selector labels.Selector
	pods     cache.SharedIndexInformer
	nodes    cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
}

func (w *World) startNetworkSimulator() error {
	s := &netSim{w: w}
	if w.opts.CNIPodSelector != nil {
		s.selector = labels.SelectorFromSet(w.opts.CNIPodSelector)
	}
	factory := informers.NewSharedInformerFactory(w.Clientset, 0)
	s.pods = factory.Core().V1().Pods().Informer()
	s.nodes = factory.Core().V1().Nodes().Informer()
	if err := s.pods.AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	s.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: w.Name + "-network-simulator"})

	enqueuePod := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			s.queue.Add(pod.Spec.NodeName)
		}
	}
	enqueueNode := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if node, ok := obj.(*corev1.Node); ok {
			s.queue.Add(node.Name)
		}
	}
	if _, err := s.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueuePod,
		UpdateFunc: func(_, obj any) { enqueuePod(obj) },
		DeleteFunc: enqueuePod,
	}); err != nil {
		return err
	}
	if _, err := s.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNode,
		UpdateFunc: func(_, obj any) { enqueueNode(obj) },
	}); err != nil {
		return err
	}

	factory.Start(w.ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(w.ctx.Done()) {
		if !ok {
			return fmt.Errorf("network simulator: cache of %v did not sync", typ)
		}
	}
	if !w.addGoroutines(3) {
		return errStopped
	}
	go func() {
		defer w.wg.Done()
		<-w.ctx.Done()
		s.queue.ShutDown()
		factory.Shutdown()
	}()
	for range 2 {
		go func() {
			defer w.wg.Done()
			for s.processNext(w.ctx) {
			}
		}()
	}
	return nil
}

func (s *netSim) processNext(ctx context.Context) bool {
	name, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(name)
	if err := s.reconcile(ctx, name); err != nil {
		if ctx.Err() == nil {
			s.queue.AddRateLimited(name)
		}
		return true
	}
	s.queue.Forget(name)
	return true
}

func (s *netSim) reconcile(ctx context.Context, nodeName string) error {
	obj, exists, err := s.nodes.GetIndexer().GetByKey(nodeName)
	if err != nil || !exists {
		return err
	}
	node := obj.(*corev1.Node)
	if node.Annotations[FakeNodeAnnotation] != "fake" {
		return nil
	}
	objs, err := s.pods.GetIndexer().ByIndex(podNodeIndex, nodeName)
	if err != nil {
		return err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}

	cniReady, cniPod := true, ""
	if s.selector != nil {
		cniReady = false
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil && s.selector.Matches(labels.Set(pod.Labels)) && podReady(pod) {
				cniReady, cniPod = true, pod.Namespace+"/"+pod.Name
				break
			}
		}
		if err := s.syncNode(ctx, node, cniReady, cniPod); err != nil {
			return err
		}
	}

	var errs []error
	for _, pod := range pods {
		if !needsSandbox(pod) || !(pod.Spec.HostNetwork || cniReady) {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, SandboxAnnotation, SandboxReady)
		_, err := s.w.Clientset.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func needsSandbox(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil &&
		pod.Annotations[SandboxAnnotation] != SandboxReady &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// syncNode writes Ready/NetworkUnavailable when they disagree with the CNI
// state. The update carries the cached resourceVersion: a conflict (kwok's
// heartbeat, kcm) just requeues.
func (s *netSim) syncNode(ctx context.Context, node *corev1.Node, ready bool, cniPod string) error {
	want := networkConditions(ready, metav1.Now(), cniPod)
	if conditionsMatch(node.Status.Conditions, want) {
		return nil
	}
	updated := node.DeepCopy()
	for _, c := range want {
		setNodeCondition(&updated.Status.Conditions, c)
	}
	_, err := s.w.Clientset.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

func conditionsMatch(have, want []corev1.NodeCondition) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h.Type == w.Type {
				found = h.Status == w.Status && h.Reason == w.Reason && h.Message == w.Message
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// setNodeCondition replaces the condition of the same type, keeping its
// transition time when the status did not change.
func setNodeCondition(conds *[]corev1.NodeCondition, c corev1.NodeCondition) {
	for i := range *conds {
		if (*conds)[i].Type != c.Type {
			continue
		}
		if (*conds)[i].Status == c.Status {
			c.LastTransitionTime = (*conds)[i].LastTransitionTime
		}
		(*conds)[i] = c
		return
	}
	*conds = append(*conds, c)
}
