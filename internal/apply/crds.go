package apply

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/tenant-operator/internal/outcome"
)

// Establish makes the API server serve crds as the binary has them: each
// CRD that is absent, not Established, or not what the binary embeds (see
// Current) is applied, all at once, each with a single forced apply (the
// CRDs are the binary's, so its fields win), and waited for until
// Established; then it waits until the API server serves watches of the
// resources of watched (see waitServed). It runs on every operator start and
// sits on the bootstrap's critical path: a CRD already current costs one GET
// instead of an apply, which the API server spends ~30 ms on even when it
// changes nothing.
func (e *Engine) Establish(ctx context.Context, probe rest.Interface, crds, watched []*unstructured.Unstructured, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	retry := outcome.Backoff(50*time.Millisecond, 2*time.Second)
	if err := untilAnswered(ctx, authGrace, retry, func(ctx context.Context) error { return e.establish(ctx, crds, timeout) }); err != nil {
		return err
	}
	return waitServed(ctx, probe, watched, timeout)
}

func (e *Engine) establish(ctx context.Context, crds []*unstructured.Unstructured, timeout time.Duration) error {
	stale := make([]bool, len(crds))
	g, gctx := errgroup.WithContext(ctx)
	for i, crd := range crds {
		g.Go(func() error {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(crd.GroupVersionKind())
			err := e.c.Get(gctx, client.ObjectKeyFromObject(crd), live)
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("reading CustomResourceDefinition %s: %w", crd.GetName(), err)
			}
			if stale[i] = err != nil || !Current(crd, live); !stale[i] {
				return nil
			}
			if err := e.c.Patch(gctx, crd.DeepCopy(), client.Apply, client.FieldOwner(e.manager), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying CustomResourceDefinition %s: %w", crd.GetName(), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var applied []*unstructured.Unstructured
	for i, crd := range crds {
		if stale[i] {
			applied = append(applied, crd)
		}
	}
	if len(applied) > 0 {
		if err := e.waitEstablished(ctx, applied); err != nil {
			return fmt.Errorf("waiting for CustomResourceDefinitions to be established: %w", err)
		}
	}
	return nil
}

// waitEstablished waits, on a watch of each CRD, until the API server
// reports it Established. kstatus's poller read every CRD of the cluster
// every 25 ms instead (its reader lists the whole kind): Flux's seven alone
// are megabytes, decoded by the operator and encoded by the API server ten
// times a second while the addon tier starts beside the network's rollout.
// A CRD whose names the API server refused fails at once with its message.
func (e *Engine) waitEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	wc, ok := e.c.(client.WithWatch)
	if !ok {
		return fmt.Errorf("the apply engine's client cannot watch")
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, crd := range crds {
		g.Go(func() error {
			for {
				w, err := wc.Watch(ctx, &apiextensionsv1.CustomResourceDefinitionList{},
					client.MatchingFields{"metadata.name": crd.GetName()})
				if err != nil {
					return fmt.Errorf("watching CustomResourceDefinition %s: %w", crd.GetName(), err)
				}
				done, err := untilEstablished(ctx, w)
				w.Stop()
				if done || err != nil {
					return err
				}
				// The API server ended the watch; a new one starts from
				// the CRD as it is then.
			}
		})
	}
	return g.Wait()
}

// untilEstablished reads w until its CRD is Established (true) or refused
// (an error); false without an error when the watch ended first.
func untilEstablished(ctx context.Context, w watch.Interface) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, open := <-w.ResultChan():
			if !open {
				return false, nil
			}
			if ev.Type == watch.Error {
				return false, apierrors.FromObject(ev.Object)
			}
			crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			if established, err := crdEstablished(crd); established || err != nil {
				return established, err
			}
		}
	}
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	for _, c := range crd.Status.Conditions {
		switch {
		case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
			return false, fmt.Errorf("CustomResourceDefinition %s: names not accepted: %s", crd.Name, c.Message)
		case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
			return true, nil
		}
	}
	return false, nil
}

// authGrace is how long 401 and 403 are taken for a young API server's
// rather than a final answer: kube-apiserver serves before its informers
// have synced, and until then rejects valid ServiceAccount tokens (the
// account is not in its cache yet, kubernetes/kubernetes#65785) and finds no
// RBAC binding (#121635) for a few seconds. A binding that is really missing
// still fails the start, this much later, with its message.
const authGrace = 30 * time.Second

// untilAnswered runs f again, after each delay, while it fails in a way that
// can pass (the API server restarting or not reachable yet), until ctx ends.
// Establish runs first thing at the operator's start: an API server that
// restarts then (a control plane rolling while the tenant is created) is
// waited for instead of making the operator exit into the kubelet's crash
// backoff, which would add its 10 s, 20 s, ... to the bootstrap. A refusal
// that no retry changes (invalid, bad request) is returned at once; 401 and
// 403 once they have lasted grace.
func untilAnswered(ctx context.Context, grace time.Duration, delay wait.DelayFunc, f func(context.Context) error) error {
	var last error
	var authSince time.Time
	err := delay.Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		last = f(ctx)
		switch {
		case last == nil || refused(last):
			return true, nil
		case apierrors.IsUnauthorized(last) || apierrors.IsForbidden(last):
			if authSince.IsZero() {
				authSince = time.Now()
				log.FromContext(ctx).Info("API server refused the operator; taken for one still syncing its caches", "grace", grace, "error", last.Error())
			}
			return time.Since(authSince) >= grace, nil
		}
		authSince = time.Time{}
		return false, nil
	})
	switch {
	case err != nil && last != nil:
		return fmt.Errorf("%w (still failing when %v)", last, err)
	case last != nil:
		return last
	}
	return err
}

// refused: the API server answered and no retry will change its answer.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}

// waitServed waits, after the CRDs are established, until the API server
// serves watches of the resources they define.
//
// Established is not enough for a controller about to watch them: the API
// server fills the watch cache of a new resource only on its first request,
// and until it is filled answers every watch with 429 "storage is
// (re)initializing" (KEP-4568) while lists still succeed from etcd. An
// informer started in that window gets the 429, backs off 0.8-1.6 s, and may
// then find its list's resourceVersion too old for the new cache and back
// off again. Measured on a bootstrap: 2.3 s during which a TenantBundle
// created right after the CRDs went unseen. A watch from "0" that the server
// accepts means the cache is filled; it is closed at once. The probe must
// not be retried by client-go, which honours the 429's Retry-After of a
// whole second.
func waitServed(ctx context.Context, rc rest.Interface, crds []*unstructured.Unstructured, timeout time.Duration) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, crd := range crds {
		gvr, ok := servedResource(crd)
		if !ok {
			continue
		}
		g.Go(func() error { return waitWatchable(ctx, rc, gvr, timeout) })
	}
	return g.Wait()
}

func waitWatchable(ctx context.Context, rc rest.Interface, gvr schema.GroupVersionResource, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, waitPoll, timeout, true, func(ctx context.Context) (bool, error) {
		body, err := rc.Get().AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource).
			Param("watch", "true").Param("resourceVersion", "0").Param("timeoutSeconds", "1").
			MaxRetries(0).Stream(ctx)
		if err != nil {
			// 429 is the expected answer until the cache is filled; any
			// other error (a restarting API server) is retried the same way
			// until the timeout, which reports it.
			if !apierrors.IsTooManyRequests(err) {
				last = err
			}
			return false, nil
		}
		_ = body.Close()
		return true, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("waiting for the API server to serve watches of %s: %w (last error: %v)", gvr.GroupResource(), err, last)
		}
		return fmt.Errorf("waiting for the API server to serve watches of %s: %w", gvr.GroupResource(), err)
	}
	return nil
}

// servedResource is the resource a CRD defines, at its first served version:
// all versions share the one watch cache.
func servedResource(crd *unstructured.Unstructured) (schema.GroupVersionResource, bool) {
	if crd.GetKind() != "CustomResourceDefinition" {
		return schema.GroupVersionResource{}, false
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			name, _ := m["name"].(string)
			return schema.GroupVersionResource{Group: group, Version: name, Resource: plural}, plural != ""
		}
	}
	return schema.GroupVersionResource{}, false
}
