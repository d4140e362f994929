package values

import (
	"reflect"
	"testing"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name     string
		dst, src map[string]any
		want     map[string]any
	}{
		{"empty", nil, nil, map[string]any{}},
		{"src wins on scalars", map[string]any{"a": 1}, map[string]any{"a": 2}, map[string]any{"a": 2}},
		{"maps merge", map[string]any{"m": map[string]any{"a": 1, "b": 1}}, map[string]any{"m": map[string]any{"b": 2}},
			map[string]any{"m": map[string]any{"a": 1, "b": 2}}},
		{"null deletes", map[string]any{"a": 1, "b": 1}, map[string]any{"a": nil}, map[string]any{"b": 1}},
		{"list replaced", map[string]any{"l": []any{1, 2}}, map[string]any{"l": []any{3}}, map[string]any{"l": []any{3}}},
		{"map replaces scalar", map[string]any{"a": 1}, map[string]any{"a": map[string]any{"x": 1}}, map[string]any{"a": map[string]any{"x": 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Merge(tt.dst, tt.src); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Merge() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMergeDoesNotAlias(t *testing.T) {
	dst := map[string]any{"m": map[string]any{"a": 1}}
	out := Merge(dst, nil)
	out["m"].(map[string]any)["a"] = 2
	if dst["m"].(map[string]any)["a"] != 1 {
		t.Fatal("Merge aliased a nested map of dst")
	}
}
