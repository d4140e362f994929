// Package values merges Helm values the way every layer of the operator
// needs: maps merge recursively, anything else is replaced, and an explicit
// null deletes the key (what a user means by "drop the chart's default").
package values

// Merge returns a new map with src layered over dst; neither is modified.
func Merge(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	for k, v := range dst {
		out[k] = copyValue(v)
	}
	for k, v := range src {
		if v == nil {
			delete(out, k)
			continue
		}
		sm, sok := v.(map[string]any)
		dm, dok := out[k].(map[string]any)
		if sok && dok {
			out[k] = Merge(dm, sm)
			continue
		}
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return Merge(nil, t)
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = copyValue(t[i])
		}
		return out
	default:
		return v
	}
}
