package apply

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cozystack/tenant-operator/internal/outcome"
)

func TestServedResource(t *testing.T) {
	crd := func(versions ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"spec": map[string]any{"group": "example.io", "names": map[string]any{"plural": "widgets"}, "versions": versions},
		}}
	}
	v := func(name string, served bool) any { return map[string]any{"name": name, "served": served} }
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want schema.GroupVersionResource
		ok   bool
	}{
		{"first served version", crd(v("v1alpha1", false), v("v1beta1", true), v("v1", true)),
			schema.GroupVersionResource{Group: "example.io", Version: "v1beta1", Resource: "widgets"}, true},
		{"nothing served", crd(v("v1", false)), schema.GroupVersionResource{}, false},
		{"not a CRD", ns, schema.GroupVersionResource{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := servedResource(tc.obj)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("servedResource = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestUntilAnswered(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("restarting")
	refusedErr := apierrors.NewBadRequest("no")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "customresourcedefinitions"}, "x", errors.New("no"))
	unauthorized := apierrors.NewUnauthorized("Unauthorized")
	for _, tc := range []struct {
		name    string
		results []error // what f returns on each call; the last one repeats
		timeout time.Duration
		grace   time.Duration
		calls   int
		want    error // matched with errors.Is
	}{
		{"answers after a restart", []error{syscall.ECONNREFUSED, unavailable, nil}, time.Minute, time.Minute, 3, nil},
		{"unreachable for longer than the backoff takes to reach its cap", append(repeat(syscall.ECONNREFUSED, 20), nil), time.Minute, time.Minute, 21, nil},
		{"a refusal is returned at once", []error{refusedErr}, time.Minute, time.Minute, 1, refusedErr},
		{"still unreachable at the deadline", []error{syscall.ECONNREFUSED}, 300 * time.Millisecond, time.Minute, 0, syscall.ECONNREFUSED},
		{"401 and 403 of a young API server are waited out", []error{syscall.ECONNREFUSED, unauthorized, forbidden, nil}, time.Minute, time.Minute, 4, nil},
		{"403 that outlasts the grace is returned before the deadline", []error{forbidden}, time.Minute, 300 * time.Millisecond, 0, forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			calls := 0
			err := untilAnswered(ctx, tc.grace, outcome.Backoff(time.Millisecond, 4*time.Millisecond), func(context.Context) error {
				r := tc.results[min(calls, len(tc.results)-1)]
				calls++
				return r
			})
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("untilAnswered = %v, want %v", err, tc.want)
			}
			if ctx.Err() != nil && tc.want != nil && tc.timeout > tc.grace {
				t.Fatalf("untilAnswered returned at the deadline, not after the grace")
			}
			if tc.calls > 0 && calls != tc.calls {
				t.Fatalf("f called %d times, want %d", calls, tc.calls)
			}
			if tc.calls == 0 && calls < 2 {
				t.Fatalf("f called %d times: a transient error must be retried", calls)
			}
		})
	}
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func TestUntilEstablished(t *testing.T) {
	crd := func(conds ...apiextensionsv1.CustomResourceDefinitionCondition) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.io"},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: conds}}
	}
	cond := func(typ apiextensionsv1.CustomResourceDefinitionConditionType, st apiextensionsv1.ConditionStatus) apiextensionsv1.CustomResourceDefinitionCondition {
		return apiextensionsv1.CustomResourceDefinitionCondition{Type: typ, Status: st, Message: "taken by another CRD"}
	}
	accepted := cond(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue)
	established := cond(apiextensionsv1.Established, apiextensionsv1.ConditionTrue)
	notYet := cond(apiextensionsv1.Established, apiextensionsv1.ConditionFalse)
	for _, tc := range []struct {
		name    string
		events  []watch.Event
		closed  bool // the server ends the watch after the events
		done    bool
		wantErr string
	}{
		{"already established when the watch starts", []watch.Event{{Type: watch.Added, Object: crd(accepted, established)}}, false, true, ""},
		{"established later", []watch.Event{{Type: watch.Added, Object: crd()}, {Type: watch.Modified, Object: crd(accepted, notYet)},
			{Type: watch.Modified, Object: crd(accepted, established)}}, false, true, ""},
		{"names refused", []watch.Event{{Type: watch.Added, Object: crd(cond(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse), notYet)}},
			false, false, "names not accepted: taken by another CRD"},
		{"watch ended before: not done, no error", []watch.Event{{Type: watch.Added, Object: crd(accepted, notYet)}}, true, false, ""},
		{"deleted meanwhile: still waiting", []watch.Event{{Type: watch.Deleted, Object: crd(accepted, established)}}, true, false, ""},
		{"watch error", []watch.Event{{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone, Message: "too old"}}},
			false, false, "too old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watch.NewFakeWithChanSize(len(tc.events), false)
			for _, ev := range tc.events {
				w.Action(ev.Type, ev.Object)
			}
			if tc.closed {
				w.Stop()
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			done, err := untilEstablished(ctx, w)
			if done != tc.done {
				t.Errorf("done = %v, want %v", done, tc.done)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}
