package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCurrent(t *testing.T) {
	manifest := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.example.io", "annotations": map[string]any{"controller-gen.kubebuilder.io/version": "v0.1"}},
			"spec": map[string]any{"group": "example.io", "versions": []any{
				map[string]any{"name": "v1", "served": true, "schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer", "maximum": int64(10)}}}}},
			}},
		}}
	}
	stamped := func(mutate func(*unstructured.Unstructured)) *unstructured.Unstructured {
		u := manifest()
		if mutate != nil {
			mutate(u)
		}
		if err := Stamp([]*unstructured.Unstructured{u}); err != nil {
			t.Fatal(err)
		}
		return u
	}
	// live is what the API server returns for a stamped apply: defaults,
	// other annotations, status.
	live := func(desired *unstructured.Unstructured, mutate func(map[string]any)) *unstructured.Unstructured {
		u := desired.DeepCopy()
		ann := u.GetAnnotations()
		ann[CreateOnlyAnnotation] = CreateOnly
		u.SetAnnotations(ann)
		_ = unstructured.SetNestedField(u.Object, "None", "spec", "conversion", "strategy")
		u.Object["spec"].(map[string]any)["versions"] = []any{map[string]any{"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
				"size": map[string]any{"type": "integer", "maximum": float64(10)}}}}}}
		u.Object["status"] = map[string]any{"conditions": []any{
			map[string]any{"type": "NamesAccepted", "status": "True"}, map[string]any{"type": "Established", "status": "True"}}}
		if mutate != nil {
			mutate(u.Object)
		}
		return u
	}
	desired := stamped(nil)
	for _, tc := range []struct {
		name          string
		desired, live *unstructured.Unstructured
		want          bool
	}{
		{"as applied, with defaults, status and a JSON number", desired, live(desired, nil), true},
		{"not established", desired, live(desired, func(o map[string]any) {
			o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "False"}}}
		}), false},
		{"a field edited in place", desired, live(desired, func(o map[string]any) {
			o["spec"].(map[string]any)["group"] = "other.io"
		}), false},
		{"a list grown in place", desired, live(desired, func(o map[string]any) {
			spec := o["spec"].(map[string]any)
			spec["versions"] = append(spec["versions"].([]any), map[string]any{"name": "v2"})
		}), false},
		{"applied from another manifest", stamped(func(u *unstructured.Unstructured) {
			// A newer manifest that only dropped a field: contained, but not the same.
			delete(u.Object["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["size"].(map[string]any), "maximum")
		}), live(desired, nil), false},
		{"never stamped", manifest(), live(manifest(), nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Current(tc.desired, tc.live); got != tc.want {
				t.Fatalf("Current = %v, want %v", got, tc.want)
			}
		})
	}
}

// The seed adds CreateOnlyAnnotation to the same manifests: the digest must
// not depend on it, or the operator would re-apply what the seed created.
func TestStampIgnoresCreateOnly(t *testing.T) {
	a := &unstructured.Unstructured{Object: map[string]any{"kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "x"}}}
	b := a.DeepCopy()
	b.SetAnnotations(map[string]string{CreateOnlyAnnotation: CreateOnly})
	if err := Stamp([]*unstructured.Unstructured{a, b}); err != nil {
		t.Fatal(err)
	}
	if a.GetAnnotations()[DigestAnnotation] != b.GetAnnotations()[DigestAnnotation] {
		t.Fatalf("digests differ: %v vs %v", a.GetAnnotations(), b.GetAnnotations())
	}
}
