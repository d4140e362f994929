// Package readiness decides whether a component is up from its rendered
// workloads, read from the informer cache and judged by kstatus, never from
// "the release was written". Reading the cache costs no API request, so a
// reconcile triggered by a workload event stays cheap.
package readiness

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Workload kinds whose readiness gates a component. The operator's cache
// watches exactly these, restricted to Helm-managed objects.
var workloadKinds = map[string]func() client.Object{
	"Deployment":  func() client.Object { return &appsv1.Deployment{} },
	"DaemonSet":   func() client.Object { return &appsv1.DaemonSet{} },
	"StatefulSet": func() client.Object { return &appsv1.StatefulSet{} },
}

// WorkloadTypes lists the typed objects to watch.
func WorkloadTypes() []client.Object {
	return []client.Object{&appsv1.Deployment{}, &appsv1.DaemonSet{}, &appsv1.StatefulSet{}}
}

// IsWorkload reports whether u is a workload that gates readiness.
func IsWorkload(u *unstructured.Unstructured) bool {
	return u.GroupVersionKind().Group == "apps" && workloadKinds[u.GetKind()] != nil
}

// Result is the readiness of one set of objects.
type Result struct {
	Ready bool
	// Missing lists workloads of the manifest that do not exist.
	Missing []string
	Message string
}

// Checker reads workloads from a cache. Right after the operator's own
// write the cache may still hold the previous object, Current for the
// previous spec: CheckLive reads the API server instead and remembers what
// it saw, and a cached copy older than that is read again, live.
type Checker struct {
	Reader client.Reader
	// Live reads the API server; Reader when nil.
	Live client.Reader

	mu    sync.Mutex
	floor map[string]seen // kind namespace/name → what a live read saw
}

type seen struct {
	uid        types.UID
	generation int64
}

// Check judges the workloads among objs; other kinds are not waited for.
func (c *Checker) Check(ctx context.Context, objs []*unstructured.Unstructured) (Result, error) {
	return c.check(ctx, objs, false)
}

// CheckLive is Check after the operator wrote the workloads itself.
func (c *Checker) CheckLive(ctx context.Context, objs []*unstructured.Unstructured) (Result, error) {
	return c.check(ctx, objs, true)
}

func (c *Checker) check(ctx context.Context, objs []*unstructured.Unstructured, live bool) (Result, error) {
	var waiting []string
	res := Result{}
	for _, u := range objs {
		if !IsWorkload(u) {
			continue
		}
		id := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
		obj, err := c.get(ctx, u, id, live)
		if apierrors.IsNotFound(err) {
			res.Missing = append(res.Missing, id)
			continue
		}
		if err != nil {
			return res, err
		}
		st, err := compute(obj, u)
		if err != nil {
			return res, err
		}
		if st.Status != status.CurrentStatus {
			waiting = append(waiting, fmt.Sprintf("%s: %s", id, st.Message))
		}
	}
	switch {
	case len(res.Missing) > 0:
		res.Message = "missing " + strings.Join(res.Missing, ", ")
	case len(waiting) > 0:
		res.Message = strings.Join(waiting, "; ")
	default:
		res.Ready = true
	}
	return res, nil
}

// get reads one workload from the cache, or live when asked to or when the
// cached copy is older than the last live read.
func (c *Checker) get(ctx context.Context, u *unstructured.Unstructured, id string, live bool) (client.Object, error) {
	key := client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}
	obj := workloadKinds[u.GetKind()]()
	if !live {
		err := c.Reader.Get(ctx, key, obj)
		if err != nil || !c.behind(id, obj) {
			return obj, err
		}
	}
	reader := c.Live
	if reader == nil {
		reader = c.Reader
	}
	obj = workloadKinds[u.GetKind()]()
	err := reader.Get(ctx, key, obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.floor == nil {
		c.floor = map[string]seen{}
	}
	if err == nil {
		c.floor[id] = seen{uid: obj.GetUID(), generation: obj.GetGeneration()}
	} else {
		delete(c.floor, id)
	}
	return obj, err
}

// behind says whether a cached copy is older than the last live read (or
// another object); a floor the cache has reached is dropped.
func (c *Checker) behind(id string, obj client.Object) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.floor[id]
	if !ok {
		return false
	}
	if f.uid == obj.GetUID() && obj.GetGeneration() >= f.generation {
		delete(c.floor, id)
		return false
	}
	return true
}

func compute(obj client.Object, like *unstructured.Unstructured) (*status.Result, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kstatusInput(obj))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	// Typed objects from the cache carry no TypeMeta; kstatus needs it.
	u.SetGroupVersionKind(like.GroupVersionKind())
	return status.Compute(u)
}

// kstatusInput is a workload without what kstatus never reads of one (it
// reads metadata.generation and deletionTimestamp, spec.replicas,
// updateStrategy and progressDeadlineSeconds, and status): the pod and
// volume claim templates, selector, labels and annotations. Converting those
// by reflection was most of the cost of judging a workload, paid twice on
// every watch event of a rollout (see Changed) and for every workload of
// every component on each reconcile, on the operator's reaction to a
// workload turning Ready.
func kstatusInput(obj client.Object) client.Object {
	slim := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, Generation: m.Generation,
			DeletionTimestamp: m.DeletionTimestamp}
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		v := appsv1.Deployment{TypeMeta: o.TypeMeta, ObjectMeta: slim(o.ObjectMeta), Spec: o.Spec, Status: o.Status}
		v.Spec.Template, v.Spec.Selector = corev1.PodTemplateSpec{}, nil
		return &v
	case *appsv1.DaemonSet:
		v := appsv1.DaemonSet{TypeMeta: o.TypeMeta, ObjectMeta: slim(o.ObjectMeta), Spec: o.Spec, Status: o.Status}
		v.Spec.Template, v.Spec.Selector = corev1.PodTemplateSpec{}, nil
		return &v
	case *appsv1.StatefulSet:
		v := appsv1.StatefulSet{TypeMeta: o.TypeMeta, ObjectMeta: slim(o.ObjectMeta), Spec: o.Spec, Status: o.Status}
		v.Spec.Template, v.Spec.Selector, v.Spec.VolumeClaimTemplates = corev1.PodTemplateSpec{}, nil, nil
		return &v
	}
	return obj
}

// Change is what an update of a workload can change for the operator.
type Change int

const (
	// Unchanged: status churn that moves neither the spec nor the kstatus
	// verdict or message (heartbeats, observedGeneration catching up).
	Unchanged Change = iota
	// Progress: only the kstatus message moved, as the counters of a
	// rollout do ("Ready: 2/3"); the verdict is what it was.
	Progress
	// Verdict: the spec (generation) or the kstatus status changed, which
	// can change what the operator decides.
	Verdict
)

// Changed classifies an update of a workload. Churn that is not a Change
// wakes nobody, which keeps the operator silent at idle; Progress wakes it
// only to refresh what it reports.
func Changed(old, new client.Object) Change {
	if old.GetGeneration() != new.GetGeneration() {
		return Verdict
	}
	a, errA := statusOf(old)
	b, errB := statusOf(new)
	switch {
	case errA != nil || errB != nil || a.Status != b.Status:
		return Verdict
	case a.Message != b.Message:
		return Progress
	}
	return Unchanged
}

func statusOf(obj client.Object) (*status.Result, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kstatusInput(obj))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme)
	if err != nil {
		return nil, err
	}
	u.SetGroupVersionKind(gvk)
	return status.Compute(u)
}
