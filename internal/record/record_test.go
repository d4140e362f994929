package record

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

type fake struct{ got []string }

func (f *fake) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	f.got = append(f.got, eventtype+"/"+reason+"/"+action)
}

var _ events.EventRecorder = &fake{}

func TestStalled(t *testing.T) {
	stalled := func(reason string) *metav1.Condition {
		return &metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: reason, Message: "m"}
	}
	for _, tc := range []struct {
		name     string
		was, now *metav1.Condition
		want     int
	}{
		{"not stalled", nil, nil, 0},
		{"becomes stalled", nil, stalled("PrivilegedNotConfirmed"), 1},
		{"stays stalled", stalled("PrivilegedNotConfirmed"), stalled("PrivilegedNotConfirmed"), 0},
		{"stalled for another reason", stalled("PrivilegedNotConfirmed"), stalled("PrivilegedForbidden"), 1},
		{"was stalled, now False", stalled("X"), &metav1.Condition{Type: "Stalled", Status: metav1.ConditionFalse}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{}
			Stalled(f, nil, tc.was, tc.now)
			if len(f.got) != tc.want {
				t.Errorf("recorded %v, want %d", f.got, tc.want)
			}
		})
	}
	Stalled(nil, nil, nil, stalled("X")) // a nil recorder records nothing, and does not panic
}

func TestNote(t *testing.T) {
	for _, msg := range []string{"short", strings.Repeat("é", 1000), strings.Repeat("x", 5000)} {
		n := Note(msg)
		if len(n) > maxNote || !utf8.ValidString(n) {
			t.Errorf("Note(%d bytes) = %d bytes, valid UTF-8 %v", len(msg), len(n), utf8.ValidString(n))
		}
		if len(msg) <= maxNote && n != msg {
			t.Errorf("a short note was changed")
		}
	}
}
