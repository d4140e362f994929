// Package readiness decides whether a component is up from its rendered
// workloads, read from the informer cache and judged by kstatus, never from
// "the release was written". Reading the cache costs no API request, so a
// reconcile triggered by a workload event stays cheap.
package readiness

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// Checker reads workloads from a cache.
type Checker struct {
	Reader client.Reader
}

// Check judges the workloads among objs; other kinds are not waited for.
func (c *Checker) Check(ctx context.Context, objs []*unstructured.Unstructured) (Result, error) {
	var waiting []string
	res := Result{}
	for _, u := range objs {
		if !IsWorkload(u) {
			continue
		}
		id := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
		obj := workloadKinds[u.GetKind()]()
		err := c.Reader.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, obj)
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

func compute(obj client.Object, like *unstructured.Unstructured) (*status.Result, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	// Typed objects from the cache carry no TypeMeta; kstatus needs it.
	u.SetGroupVersionKind(like.GroupVersionKind())
	return status.Compute(u)
}

// Changed reports whether an update of a workload can change what the
// operator decides: its spec (generation) or its kstatus verdict. Status
// churn that leaves both alone (heartbeats, counters that do not cross a
// threshold) wakes nobody, which keeps the operator silent at idle.
func Changed(old, new client.Object) bool {
	if old.GetGeneration() != new.GetGeneration() {
		return true
	}
	a, errA := statusOf(old)
	b, errB := statusOf(new)
	return errA != nil || errB != nil || a.Status != b.Status || a.Message != b.Message
}

func statusOf(obj client.Object) (*status.Result, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
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
