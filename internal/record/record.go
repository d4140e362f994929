// Package record records the Events of every controller here: on
// transitions only, so an idle operator writes none.
package record

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// maxNote is what the API server accepts in an Event's note
// (events.k8s.io/v1 validation: 1 kB).
const maxNote = 1024

// Note shortens msg to what an Event holds.
func Note(msg string) string {
	if len(msg) <= maxNote {
		return msg
	}
	const more = " …"
	cut := maxNote - len(more)
	// Not inside a UTF-8 sequence.
	for cut > 0 && msg[cut]&0xC0 == 0x80 {
		cut--
	}
	return msg[:cut] + more
}

// Stalled records a Warning the moment obj becomes Stalled (now, its
// Stalled condition) or Stalled for another reason; nothing while it stays
// as it was. A nil recorder records nothing.
func Stalled(rec events.EventRecorder, obj runtime.Object, was, now *metav1.Condition) {
	if rec == nil || now == nil || now.Status != metav1.ConditionTrue {
		return
	}
	if was != nil && was.Status == now.Status && was.Reason == now.Reason {
		return
	}
	rec.Eventf(obj, nil, corev1.EventTypeWarning, now.Reason, "Stall", "%s", Note(now.Message))
}
