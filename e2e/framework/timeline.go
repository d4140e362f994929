package framework

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event is one observed transition. RV is the etcd revision of the write
// that caused it; one etcd orders every write of the cluster, so comparing
// RVs orders events across kinds without trusting any clock.
type Event struct {
	RV        uint64
	Kind      string // Node, Pod, DaemonSet, Deployment, Release
	Namespace string
	Name      string
	Node      string // for pods
	What      string // Ready, or a release status
	Labels    map[string]string
}

func (e Event) String() string {
	return fmt.Sprintf("rv=%d %s %s/%s %s node=%s", e.RV, e.Kind, e.Namespace, e.Name, e.What, e.Node)
}

// Timeline records, from watches, when nodes, pods and DaemonSets turn
// Ready and when Helm release revisions are written.
type Timeline struct {
	mu     sync.Mutex
	events []Event
	seen   map[string]bool
}

// RecordTimeline starts recording until ctx ends.
func RecordTimeline(ctx context.Context, cfg *rest.Config) (*Timeline, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	t := &Timeline{seen: map[string]bool{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	onObj := func(obj any) { t.observe(obj) }
	handler := cache.ResourceEventHandlerFuncs{AddFunc: onObj, UpdateFunc: func(_, n any) { t.observe(n) }}
	for _, inf := range []cache.SharedIndexInformer{
		f.Core().V1().Nodes().Informer(), f.Core().V1().Pods().Informer(),
		f.Apps().V1().DaemonSets().Informer(), f.Apps().V1().Deployments().Informer(),
		f.Core().V1().Secrets().Informer(),
	} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("timeline: %v did not sync", typ)
		}
	}
	return t, nil
}

func (t *Timeline) observe(obj any) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	rv, _ := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	e := Event{RV: rv, Namespace: o.GetNamespace(), Name: o.GetName(), Labels: o.GetLabels()}
	switch v := obj.(type) {
	case *corev1.Node:
		if !NodeReady(v) {
			return
		}
		e.Kind, e.What = "Node", "Ready"
	case *corev1.Pod:
		if !podReady(v) {
			return
		}
		e.Kind, e.What, e.Node = "Pod", "Ready", v.Spec.NodeName
	case *appsv1.DaemonSet:
		s := v.Status
		if s.DesiredNumberScheduled == 0 || s.NumberReady < s.DesiredNumberScheduled {
			return
		}
		e.Kind, e.What = "DaemonSet", "Ready"
	case *appsv1.Deployment:
		// Recording starts before the tenant is seeded, so the first
		// sight of a Deployment is its creation.
		e.Kind, e.What = "Deployment", "Created"
	case *corev1.Secret:
		if v.Labels["owner"] != "helm" {
			return
		}
		e.Kind, e.What = "Release", v.Labels["status"]
		e.Name = v.Labels["name"] + " v" + v.Labels["version"]
	default:
		return
	}
	key := e.Kind + "/" + e.Namespace + "/" + e.Name + "/" + e.What
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[key] {
		return // only the first time a thing turns Ready (or a revision gets a status) matters
	}
	t.seen[key] = true
	t.events = append(t.events, e)
}

// First returns the earliest event matching pred.
func (t *Timeline) First(pred func(Event) bool) (Event, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best Event
	found := false
	for _, e := range t.events {
		if pred(e) && (!found || e.RV < best.RV) {
			best, found = e, true
		}
	}
	return best, found
}

// Events returns a copy of everything recorded.
func (t *Timeline) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.events...)
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// String lists every event in revision order, for failure messages.
func (t *Timeline) String() string {
	events := t.Events()
	sort.Slice(events, func(i, j int) bool { return events[i].RV < events[j].RV })
	var b strings.Builder
	for _, e := range events {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// MustFirst is the first recorded event of a kind and name; an empty what
// matches any. The timeline's informers deliver after the API server has
// answered other clients, so it waits for the event to arrive (bounded);
// it fails the spec, with the timeline, when there is none.
func (t *Timeline) MustFirst(kind, ns, name, what string) Event {
	var e Event
	gomega.Eventually(func(g gomega.Gomega) {
		var ok bool
		e, ok = t.First(func(e Event) bool {
			return e.Kind == kind && e.Namespace == ns && e.Name == name && (what == "" || e.What == what)
		})
		g.Expect(ok).To(gomega.BeTrue(), "no %s %s/%s %s in the timeline:\n%s", kind, ns, name, what, t.String())
	}).WithTimeout(timelineLag).Should(gomega.Succeed())
	return e
}

// timelineLag bounds how long an event the API server has already served
// may take to reach the timeline's informers.
const timelineLag = 30 * time.Second
