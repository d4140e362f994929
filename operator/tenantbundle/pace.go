package tenantbundle

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// pacer spaces out the routine status writes of a bootstrap in progress.
// Measured on the bench, each status write of a TenantBundle is a
// server-side apply that the API server spends 15–65 ms on while the
// bootstrap saturates the machine, beside the rollout the bootstrap waits
// for; and the reconcile that sees a component Ready queued behind a write
// in flight. A write that changes what a client decides on is never held.
type pacer struct {
	// every is the least time between two routine writes of one object;
	// 0 holds none.
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// hold is how long a routine write of key must wait (0: write now).
func (p *pacer) hold(key types.NamespacedName) time.Duration {
	if p == nil || p.every <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, p.every-p.clock().Sub(last))
}

// wrote records a status write of key.
func (p *pacer) wrote(key types.NamespacedName) {
	if p == nil || p.every <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.NamespacedName]time.Time{}
	}
	p.last[key] = p.clock()
}

// forget drops a deleted object's record.
func (p *pacer) forget(key types.NamespacedName) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

func (p *pacer) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// routine reports whether after only tells how far a bootstrap in progress
// has come since before: component states and messages moved on, while the
// observed generation, the artifact, the handled reconcile request and every
// condition's status, reason and observed generation stayed, and the
// bundle is not Ready. kstatus, `kubectl wait` and the fault trials decide
// on exactly those, so holding such a write back a moment hides nothing a
// client acts on; the first write of a generation, an error, Stalled and
// Ready always go out at once.
func routine(before, after tenantv1.TenantBundleStatus) bool {
	if c := meta.FindStatusCondition(after.Conditions, tenantv1.ReadyCondition); c == nil || c.Status == metav1.ConditionTrue {
		return false
	}
	strip := func(s tenantv1.TenantBundleStatus) *tenantv1.TenantBundleStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].Message, s.Conditions[i].LastTransitionTime = "", metav1.Time{}
		}
		s.Components = nil
		return &s
	}
	return equality.Semantic.DeepEqual(strip(before), strip(after))
}
