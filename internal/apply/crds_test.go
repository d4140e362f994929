package apply

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		{"a refusal is returned at once", []error{refusedErr}, time.Minute, time.Minute, 1, refusedErr},
		{"still unreachable at the deadline", []error{syscall.ECONNREFUSED}, 300 * time.Millisecond, time.Minute, 0, syscall.ECONNREFUSED},
		{"401 and 403 of a young API server are waited out", []error{syscall.ECONNREFUSED, unauthorized, forbidden, nil}, time.Minute, time.Minute, 4, nil},
		{"403 that outlasts the grace is returned before the deadline", []error{forbidden}, time.Minute, 300 * time.Millisecond, 0, forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			calls := 0
			err := untilAnswered(ctx, tc.grace, func(context.Context) error {
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
