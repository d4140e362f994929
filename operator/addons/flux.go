package addons

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/flux"
	"github.com/cozystack/tenant-operator/internal/outcome"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// fluxState remembers the generation of the Flux Deployment after the
// operator last applied it: an equal generation means nobody changed it,
// so a reconcile costs no request; a deleted or edited Deployment is
// re-applied on its watch event.
type fluxState struct {
	mu         sync.Mutex
	generation int64
}

// ensureFlux applies the embedded Flux manifests when they are missing or
// were changed by someone else. The addon tier starts once NetworkReady is
// True, so this never competes with the network tier for the API server.
func (r *Reconciler) ensureFlux(ctx context.Context) error {
	key := client.ObjectKey{Namespace: flux.Namespace, Name: flux.Deployment}
	cur := &appsv1.Deployment{}
	err := r.Get(ctx, key, cur)
	if client.IgnoreNotFound(err) != nil {
		return outcome.Retry(tenantv1.ReasonAddonsNotReady, err)
	}
	r.flux.mu.Lock()
	defer r.flux.mu.Unlock()
	if err == nil && cur.Generation == r.flux.generation {
		return nil
	}
	objs, err := flux.Objects(r.APIHost, r.APIPort)
	if err != nil {
		return outcome.Terminal(tenantv1.ReasonInvalidSpec, "flux manifests: %v", err)
	}
	// The namespace first, as its own apply: what lives in it cannot be
	// created before it. No readiness wait: a namespace is usable at once,
	// and this runs on the bootstrap's critical path.
	var first, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	for _, stage := range [][]*unstructured.Unstructured{first, rest} {
		if _, err := r.Apply.Correct(ctx, stage); err != nil {
			return outcome.Retry(tenantv1.ReasonAddonsNotReady, fmt.Errorf("flux: %w", err))
		}
	}
	// The cache lags behind the apply; the generation comes from the API.
	applied := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, key, applied); err != nil && !apierrors.IsNotFound(err) {
		return outcome.Retry(tenantv1.ReasonAddonsNotReady, err)
	}
	r.flux.generation = applied.Generation
	return nil
}

// memo is a string remembered across reconciles.
type memo struct {
	mu sync.Mutex
	v  string
}

func (m *memo) Load() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.v
}

func (m *memo) Store(v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.v = v
}
