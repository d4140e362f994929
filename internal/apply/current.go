package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DigestAnnotation records on a CRD the digest of the manifest it was
// applied from (see Stamp). Containment alone cannot tell a CRD whose newer
// manifest dropped a field from the older one still holding it; the digest
// can.
const DigestAnnotation = "tenant.cozystack.io/manifest-digest"

// ReadStamped is ReadManifests, each object stamped (Stamp): how the
// operator and the seed read the CRDs they apply, so that both stamp the
// same digest.
func ReadStamped(fsys fs.FS, pattern string) ([]*unstructured.Unstructured, error) {
	objs, err := ReadManifests(fsys, pattern)
	if err != nil {
		return nil, err
	}
	return objs, Stamp(objs)
}

// Stamp sets DigestAnnotation on each object to the SHA-256 of the object as
// given, without that annotation and without CreateOnlyAnnotation (which the
// seed adds to the same manifests).
func Stamp(objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		c := o.DeepCopy()
		ann := c.GetAnnotations()
		delete(ann, DigestAnnotation)
		delete(ann, CreateOnlyAnnotation)
		if len(ann) == 0 {
			ann = nil // no empty map either: the digest must not see one
		}
		c.SetAnnotations(ann)
		raw, err := json.Marshal(c.Object) // maps marshal with sorted keys
		if err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		sum := sha256.Sum256(raw)
		ann = o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[DigestAnnotation] = "sha256:" + hex.EncodeToString(sum[:])
		o.SetAnnotations(ann)
	}
	return nil
}

// Current says whether the live CRD is the stamped desired one, Established:
// it carries the same manifest digest and still holds every field desired
// sets, with the same value (the API server adds defaults, and other
// managers may add fields, which an apply would not remove either). A
// desired object without a digest is never current.
func Current(desired, live *unstructured.Unstructured) bool {
	want := desired.GetAnnotations()[DigestAnnotation]
	if want == "" || live.GetAnnotations()[DigestAnnotation] != want || !established(live) {
		return false
	}
	return contains(live.Object, desired.Object)
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// contains says whether every field of want is in have with the same value;
// lists must have the same length, element by element.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		if hn, ok := number(have); ok {
			wn, ok := number(want)
			return ok && hn == wn
		}
		return reflect.DeepEqual(have, want)
	}
}

// number reads the numeric types a decoded manifest and a decoded API
// response may each hold for the same value.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
