// Package statuswrite decides when a controller may skip a status write.
//
// Every controller here computes a status from the object its cache
// returned and writes nothing when that status did not change, as the patch
// helpers of Flux and Cluster API do. The cache can lag behind the
// controller's own last write, though. A status that goes A, then B
// (written), then back to A within that lag compares equal to the stale A
// and is never written: B stays on the server, and since these controllers
// ignore status-only events, it stays until some other event. A Memo keeps
// the status each object was last written with, so a write is skipped only
// when both the object read and the last write already say what is wanted.
package statuswrite

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Memo remembers, per object, the status this process last wrote. S is
// whatever the controller writes: the whole status, or the one condition
// it owns. The zero value is ready to use.
type Memo[S any] struct {
	mu   sync.Mutex
	last map[types.NamespacedName]written[S]
}

type written[S any] struct {
	uid    types.UID
	status S
}

// Unchanged reports whether want need not be written to the object key
// (with uid): it equals the status read and, when this process wrote the
// object's status before, the status last written. A status never written
// by this process (after a restart, say) is judged by the read alone.
func (m *Memo[S]) Unchanged(key types.NamespacedName, uid types.UID, read, want S) bool {
	if !equality.Semantic.DeepEqual(read, want) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.last[key]
	return !ok || w.uid != uid || equality.Semantic.DeepEqual(w.status, want)
}

// Wrote records the status just written to the object. s must not be
// modified afterwards (pass a copy).
func (m *Memo[S]) Wrote(key types.NamespacedName, uid types.UID, s S) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[types.NamespacedName]written[S]{}
	}
	m.last[key] = written[S]{uid: uid, status: s}
}

// Last is the status this process last wrote to the object, if it wrote
// one to this object (uid). A controller that is the only writer of a
// status takes its merge patch from it: it is what the server holds, even
// while the cache still shows an older status.
func (m *Memo[S]) Last(key types.NamespacedName, uid types.UID) (S, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.last[key]
	if !ok || w.uid != uid {
		var zero S
		return zero, false
	}
	return w.status, true
}

// MergePatch writes obj's status (status picks it out of an object) with a
// merge patch, unless nothing changed (see Unchanged), for a controller that
// is its only writer. The patch is taken from the status last written, when
// there is one: that is what the server holds even while the cache, and so
// before, still shows an older one, from which a status going back to it
// would be no change at all.
func (m *Memo[S]) MergePatch(ctx context.Context, w client.StatusClient, before, obj client.Object, status func(client.Object) *S, opts ...client.SubResourcePatchOption) error {
	key, uid := client.ObjectKeyFromObject(obj), obj.GetUID()
	if m.Unchanged(key, uid, *status(before), *status(obj)) {
		return nil
	}
	base := before
	if last, ok := m.Last(key, uid); ok {
		// Only read (marshalled) by the patch, so sharing last is safe.
		base = before.DeepCopyObject().(client.Object)
		*status(base) = last
	}
	if err := w.Status().Patch(ctx, obj, client.MergeFrom(base), opts...); err != nil {
		return err
	}
	// obj now holds the API server's answer: the status as stored.
	m.Wrote(key, uid, *status(obj.DeepCopyObject().(client.Object)))
	return nil
}

// Forget drops the record of a deleted object.
func (m *Memo[S]) Forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, key)
}
