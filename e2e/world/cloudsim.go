package world

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// StartCloudSimulator stands in for a cloud controller manager's node
// controller. Once a Ready pod matching ccmSelector runs in ccmNamespace of
// ccmWorld (w itself for a CCM inside the tenant, or a management world for a
// CCM placed next to the control plane), every node of w gets
// spec.providerID = providerIDFor(node) if it has none, and loses the
// uninitialized taint. While no such pod is Ready nothing happens, so a
// workload that needs initialised nodes waits like it would on real VMs. Runs
// until ctx ends or w stops. providerIDFor may be nil: "world://<world>/<node>".
func (w *World) StartCloudSimulator(ctx context.Context, ccmWorld *World, ccmNamespace string,
	ccmSelector map[string]string, providerIDFor func(*corev1.Node) string) error {
	if ccmWorld == nil {
		ccmWorld = w
	}
	if len(ccmSelector) == 0 {
		return errors.New("cloud simulator: an empty CCM pod selector would match every pod")
	}
	if providerIDFor == nil {
		providerIDFor = func(n *corev1.Node) string { return "world://" + w.Name + "/" + n.Name }
	}
	// Stop with whichever ends first: the caller's ctx or either world.
	ctx, cancel := context.WithCancel(ctx)
	stopW := context.AfterFunc(w.ctx, cancel)
	stopCCM := context.AfterFunc(ccmWorld.ctx, cancel)

	selector := labels.SelectorFromSet(ccmSelector)
	ccmFactory := informers.NewSharedInformerFactoryWithOptions(ccmWorld.Clientset, 0,
		informers.WithNamespace(ccmNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector.String() }))
	ccmPods := ccmFactory.Core().V1().Pods().Informer()
	nodeFactory := informers.NewSharedInformerFactory(w.Clientset, 0)
	nodes := nodeFactory.Core().V1().Nodes().Informer()

	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: w.Name + "-cloud-simulator"})
	enqueueAllNodes := func(any) {
		for _, key := range nodes.GetIndexer().ListKeys() {
			queue.Add(key)
		}
	}
	enqueueNode := func(obj any) {
		if node, ok := obj.(*corev1.Node); ok {
			queue.Add(node.Name)
		}
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{ccmPods, cache.ResourceEventHandlerFuncs{AddFunc: enqueueAllNodes,
			UpdateFunc: func(_, o any) { enqueueAllNodes(o) }, DeleteFunc: enqueueAllNodes}},
		{nodes, cache.ResourceEventHandlerFuncs{AddFunc: enqueueNode,
			UpdateFunc: func(_, o any) { enqueueNode(o) }}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			cancel()
			return err
		}
	}
	ccmFactory.Start(ctx.Done())
	nodeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), ccmPods.HasSynced, nodes.HasSynced) {
		cancel()
		return errors.New("cloud simulator: caches did not sync")
	}

	ccmReady := func() bool {
		for _, obj := range ccmPods.GetStore().List() {
			pod := obj.(*corev1.Pod)
			if pod.DeletionTimestamp == nil && podReady(pod) {
				return true
			}
		}
		return false
	}
	initialize := func(name string) error {
		if !ccmReady() {
			return nil
		}
		obj, exists, err := nodes.GetIndexer().GetByKey(name)
		if err != nil || !exists {
			return err
		}
		if n := obj.(*corev1.Node); n.Spec.ProviderID != "" && !hasTaint(n, TaintUninitialized) {
			return nil
		}
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := w.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if node.Spec.ProviderID == "" {
				node.Spec.ProviderID = providerIDFor(node)
			}
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool {
				return t.Key == TaintUninitialized
			})
			_, err = w.Clientset.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			return err
		})
	}

	if !w.addGoroutines(2) {
		cancel()
		return errStopped
	}
	go func() {
		defer w.wg.Done()
		<-ctx.Done()
		queue.ShutDown()
		ccmFactory.Shutdown()
		nodeFactory.Shutdown()
		stopW()
		stopCCM()
	}()
	go func() {
		defer w.wg.Done()
		for {
			name, shutdown := queue.Get()
			if shutdown {
				return
			}
			err := initialize(name)
			switch {
			case err == nil || apierrors.IsNotFound(err):
				queue.Forget(name)
			case ctx.Err() == nil:
				queue.AddRateLimited(name)
			}
			queue.Done(name)
		}
	}()
	enqueueAllNodes(nil)
	return nil
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}
