package statuswrite

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestUnchanged(t *testing.T) {
	key := types.NamespacedName{Name: "tenant"}
	tests := []struct {
		name       string
		wrote      *string // status last written by this process, if any
		wroteUID   types.UID
		read, want string
		unchanged  bool
	}{
		{name: "never written, read says it", read: "A", want: "A", unchanged: true},
		{name: "never written, read differs", read: "A", want: "B", unchanged: false},
		{name: "read caught up with the last write", wrote: ptr("A"), wroteUID: "1", read: "A", want: "A", unchanged: true},
		{name: "read differs", wrote: ptr("A"), wroteUID: "1", read: "A", want: "B", unchanged: false},
		// A, then B written, then A wanted again while the cache still
		// shows A: the server holds B.
		{name: "stale read equal to want, last write differs", wrote: ptr("B"), wroteUID: "1", read: "A", want: "A", unchanged: false},
		// The object was deleted and created again under the same name:
		// what was written went to the old one.
		{name: "last write was to an earlier object of that name", wrote: ptr("B"), wroteUID: "0", read: "A", want: "A", unchanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Memo[string]
			if tt.wrote != nil {
				m.Wrote(key, tt.wroteUID, *tt.wrote)
			}
			if got := m.Unchanged(key, "1", tt.read, tt.want); got != tt.unchanged {
				t.Errorf("Unchanged = %v, want %v", got, tt.unchanged)
			}
		})
	}
}

func TestForget(t *testing.T) {
	key := types.NamespacedName{Name: "tenant"}
	var m Memo[string]
	m.Wrote(key, "1", "B")
	if m.Unchanged(key, "1", "A", "A") {
		t.Fatal("a stale read was trusted over the last write")
	}
	m.Forget(key)
	if !m.Unchanged(key, "1", "A", "A") {
		t.Error("a forgotten object is still judged by its last write")
	}
}

func TestLast(t *testing.T) {
	key := types.NamespacedName{Name: "pkg"}
	var m Memo[string]
	if _, ok := m.Last(key, "1"); ok {
		t.Fatal("a status never written is known")
	}
	m.Wrote(key, "1", "B")
	if s, ok := m.Last(key, "1"); !ok || s != "B" {
		t.Errorf("Last = %q, %v; want B, true", s, ok)
	}
	if _, ok := m.Last(key, "2"); ok {
		t.Error("the status written to an earlier object of that name is taken for the new one's")
	}
}

func ptr(s string) *string { return &s }
