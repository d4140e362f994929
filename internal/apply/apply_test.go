package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestStoredCondition(t *testing.T) {
	answer := func(status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": status}}
	}
	ready := map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "ok",
		"lastTransitionTime": "2026-12-07T07:00:00Z"}
	addons := map[string]any{"type": "AddonsReady", "status": "False", "reason": "Progressing", "message": "2 of 3",
		"lastTransitionTime": "2026-12-07T07:00:01Z", "observedGeneration": int64(3)}
	tests := []struct {
		name    string
		u       *unstructured.Unstructured
		want    string // reason of the condition found
		wantErr bool
	}{
		{"among others", answer(map[string]any{"conditions": []any{ready, addons}}), "Progressing", false},
		{"missing", answer(map[string]any{"conditions": []any{ready}}), "", true},
		{"no conditions", answer(map[string]any{}), "", true},
		{"not a list", answer(map[string]any{"conditions": "x"}), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := storedCondition(tt.u, "AddonsReady")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if c.Reason != tt.want || c.ObservedGeneration != 3 || c.LastTransitionTime.UTC().Second() != 1 {
				t.Errorf("got %+v", c)
			}
		})
	}
}
