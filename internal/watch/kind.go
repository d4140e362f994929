// Package watch holds how the operator watches: the informers' watch
// timeouts (timeout.go) and the event source of the bootstrap controller.
//
// The event source does what controller-runtime's source.Kind does (an
// informer from the manager's cache, a handler with predicates feeding the
// workqueue, workers held until the initial list is delivered) but waits on
// client-go's completion channels instead of polling: source.Kind polls the
// informer and then its handler registration every 100 ms, and those two
// polls were 0.2 s of a ~1 s bootstrap, spent after the TenantBundle existed
// and before the first install.
package watch

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Kind is a source of events for objects of one type.
type Kind struct {
	cache      cache.Cache
	obj        client.Object
	handler    handler.EventHandler
	predicates []predicate.Predicate
	reg        toolscache.ResourceEventHandlerRegistration
}

var _ source.SyncingSource = &Kind{}

// Objects returns a source of the events of obj's type in c.
func Objects(c cache.Cache, obj client.Object, h handler.EventHandler, predicates ...predicate.Predicate) *Kind {
	return &Kind{cache: c, obj: obj, handler: h, predicates: predicates}
}

// Start registers the handler. The informer is not waited for here: the
// controller calls WaitForSync next, on the same goroutine.
func (k *Kind) Start(ctx context.Context, q queue) error {
	inf, err := k.cache.GetInformer(ctx, k.obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("informer for %T: %w", k.obj, err)
	}
	k.reg, err = inf.AddEventHandlerWithOptions(&adapter{ctx: ctx, q: q, h: k.handler, predicates: k.predicates},
		toolscache.HandlerOptions{})
	return err
}

// WaitForSync returns once the informer has listed and every object of that
// list has been handed to the handler, so no worker acts on a partial cache.
func (k *Kind) WaitForSync(ctx context.Context) error {
	select {
	case <-k.reg.HasSyncedChecker().Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("informer for %T did not sync: %w", k.obj, ctx.Err())
	}
}

func (k *Kind) String() string { return fmt.Sprintf("watch source: %T", k.obj) }

// adapter turns informer callbacks into handler events, filtered by the
// predicates, the way controller-runtime's own sources do.
type adapter struct {
	ctx        context.Context
	q          queue
	h          handler.EventHandler
	predicates []predicate.Predicate
}

func (a *adapter) OnAdd(obj any, initial bool) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	e := event.CreateEvent{Object: o, IsInInitialList: initial}
	if a.pass(func(p predicate.Predicate) bool { return p.Create(e) }) {
		a.h.Create(a.ctx, e, a.q)
	}
}

func (a *adapter) OnUpdate(oldObj, newObj any) {
	o, okOld := oldObj.(client.Object)
	n, okNew := newObj.(client.Object)
	if !okOld || !okNew {
		return
	}
	e := event.UpdateEvent{ObjectOld: o, ObjectNew: n}
	if a.pass(func(p predicate.Predicate) bool { return p.Update(e) }) {
		a.h.Update(a.ctx, e, a.q)
	}
}

func (a *adapter) OnDelete(obj any) {
	e := event.DeleteEvent{}
	// A delete seen only after a relist carries the last state we knew.
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		e.DeleteStateUnknown, obj = true, tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	e.Object = o
	if a.pass(func(p predicate.Predicate) bool { return p.Delete(e) }) {
		a.h.Delete(a.ctx, e, a.q)
	}
}

// pass reports whether every predicate lets the event through.
func (a *adapter) pass(allows func(predicate.Predicate) bool) bool {
	for _, p := range a.predicates {
		if !allows(p) {
			return false
		}
	}
	return true
}
