package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

// The harness learns of readiness from watches, never by polling: a poll
// every few milliseconds was the busiest client of the API server in the
// timed window (60 GETs of the TenantBundle in a bootstrap of under a
// second, the workloads' GETs in the limit's), on a machine whose two cores
// the bootstrap already saturates, and it rounded every moment up to its
// interval.

// watchingClient is an admin client of cfg that can watch our kinds too.
func watchingClient(cfg *rest.Config) (client.WithWatch, error) {
	return client.NewWithWatch(cfg, client.Options{Scheme: framework.Scheme()})
}

// untilSynced waits until ready holds for the objects of list (narrowed by
// opts) as an informer sees them: once after its first list, then after
// each change. ready is given every object the informer holds.
func untilSynced(ctx context.Context, c client.WithWatch, list client.ObjectList, timeout time.Duration,
	ready func([]runtime.Object) (bool, error), opts ...client.ListOption) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return l, c.List(ctx, l, append(opts, &client.ListOptions{Raw: &o})...)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return c.Watch(ctx, l, append(opts, &client.ListOptions{Raw: &o})...)
		},
	}
	var store cache.Store
	judge := func() (bool, error) {
		objs := make([]runtime.Object, 0, len(store.List()))
		for _, o := range store.List() {
			objs = append(objs, o.(runtime.Object))
		}
		return ready(objs)
	}
	item, err := itemOf(c, list)
	if err != nil {
		return err
	}
	_, err = watchtools.UntilWithSync(ctx, lw, item,
		func(s cache.Store) (bool, error) { store = s; return judge() },
		func(watch.Event) (bool, error) { return judge() })
	if err != nil {
		return fmt.Errorf("waiting on a watch of %T: %w", list, err)
	}
	return nil
}

// watchUntil opens a watch like untilSynced and returns once the watch has
// synced, with a wait for ready. The harness opens its watch before it starts
// a clock, so that what it costs to start one (a list, a watch, a REST
// mapping) is not timed, nor beside what is, on the same two cores.
func watchUntil(ctx context.Context, c client.WithWatch, list client.ObjectList, timeout time.Duration,
	ready func([]runtime.Object) (bool, error), opts ...client.ListOption) (wait func() error, err error) {
	synced := make(chan struct{})
	done := make(chan error, 1)
	var once sync.Once
	go func() {
		done <- untilSynced(ctx, c, list, timeout, func(objs []runtime.Object) (bool, error) {
			once.Do(func() { close(synced) })
			return ready(objs)
		}, opts...)
	}()
	select {
	case <-synced:
		return func() error { return <-done }, nil
	case err := <-done:
		// It ended before it synced (an error, or ctx done).
		return nil, err
	}
}

// itemOf is an empty object of the kind list holds.
func itemOf(c client.Client, list client.ObjectList) (runtime.Object, error) {
	gvk, err := c.GroupVersionKindFor(list)
	if err != nil {
		return nil, err
	}
	gvk.Kind = gvk.Kind[:len(gvk.Kind)-len("List")]
	return c.Scheme().New(gvk)
}

// workloadEvents opens watches on the workloads of a namespace and merges
// their events into one channel; the watches stop when ctx ends. Opened
// before a change, they deliver everything that follows it.
func workloadEvents(ctx context.Context, c client.WithWatch, ns string) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	for _, list := range []client.ObjectList{&appsv1.DaemonSetList{}, &appsv1.DeploymentList{}, &appsv1.StatefulSetList{}} {
		wi, err := c.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			return nil, err
		}
		go func() {
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-wi.ResultChan():
					if !ok {
						return
					}
					// One pending wake-up is enough: the check reads
					// everything afresh.
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return out, nil
}

// untilChecked runs check now and after every event until it holds.
func untilChecked(ctx context.Context, events <-chan struct{}, timeout time.Duration, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := check(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-events:
		}
	}
}
