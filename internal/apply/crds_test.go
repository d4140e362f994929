package apply

import (
	"testing"

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
