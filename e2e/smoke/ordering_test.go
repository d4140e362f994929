package smoke

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// readinessOrder records, per node, the resourceVersion at which the node
// and a CNI pod on it were first seen Ready. All objects live in one etcd, so
// their resourceVersions are revisions of one log: comparing them orders the
// two events exactly, which polling cannot.
type readinessOrder struct {
	mu        sync.Mutex
	nodeReady map[string]uint64
	cniReady  map[string]uint64
}

// watchReadinessOrder starts watching nodes and the CNI pods from the
// current state; it stops with ctx.
func watchReadinessOrder(ctx context.Context, cniNamespace string, cniLabels map[string]string) *readinessOrder {
	o := &readinessOrder{nodeReady: map[string]uint64{}, cniReady: map[string]uint64{}}
	cs := w.Clientset

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for i := range nodes.Items {
		o.observeNode(&nodes.Items[i])
	}
	nodeWatch, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: nodes.ResourceVersion})
	Expect(err).NotTo(HaveOccurred())

	selector := labels.SelectorFromSet(cniLabels).String()
	pods, err := cs.CoreV1().Pods(cniNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	Expect(err).NotTo(HaveOccurred())
	for i := range pods.Items {
		o.observePod(&pods.Items[i])
	}
	podWatch, err := cs.CoreV1().Pods(cniNamespace).Watch(ctx, metav1.ListOptions{
		LabelSelector: selector, ResourceVersion: pods.ResourceVersion})
	Expect(err).NotTo(HaveOccurred())

	consume := func(wi watch.Interface) {
		defer GinkgoRecover()
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			switch obj := ev.Object.(type) {
			case *corev1.Node:
				o.observeNode(obj)
			case *corev1.Pod:
				if ev.Type != watch.Deleted {
					o.observePod(obj)
				}
			}
		}
	}
	go consume(nodeWatch)
	go consume(podWatch)
	return o
}

func revision(obj metav1.Object) uint64 {
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return rv
}

func (o *readinessOrder) observeNode(n *corev1.Node) {
	if nodeCondition(n, corev1.NodeReady) != corev1.ConditionTrue {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.nodeReady[n.Name]; !seen {
		o.nodeReady[n.Name] = revision(n)
	}
}

func (o *readinessOrder) observePod(p *corev1.Pod) {
	if p.Spec.NodeName == "" || !isPodReady(p) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.cniReady[p.Spec.NodeName]; !seen {
		o.cniReady[p.Spec.NodeName] = revision(p)
	}
}

// expectCNIFirst asserts every node that became Ready did so at a later
// revision than a CNI pod on it became Ready.
func (o *readinessOrder) expectCNIFirst(g Gomega, nodeNames []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range nodeNames {
		nodeRV, ok := o.nodeReady[n]
		g.Expect(ok).To(BeTrue(), "node %s not seen Ready", n)
		cniRV, ok := o.cniReady[n]
		g.Expect(ok).To(BeTrue(), "node %s Ready but no CNI pod on it was seen Ready", n)
		if nodeRV < cniRV {
			StopTrying(fmt.Sprintf("node %s became Ready at revision %d, before its CNI pod at %d", n, nodeRV, cniRV)).Now()
		}
	}
}
