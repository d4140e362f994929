package addons

import (
	"context"
	"fmt"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/outcome"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// Starter applies the Flux CRDs and adds the addon tier's controllers to a
// running manager once a TenantBundle's network tier is Ready and those
// CRDs are established. Nothing the addon tier installs can turn Ready
// before the CNI runs, while starting it beside the network tier was
// measured to cost the bootstrap's critical path about 0.3 s on two
// cores: the API server establishing seven large CRDs and three more
// controllers filling their caches compete with the Cilium install.
type Starter struct {
	Manager ctrl.Manager
	Apply   *apply.Engine
	// Probe asks the API server whether it serves the new resources.
	Probe rest.Interface
	// CRDs parses the Flux CRDs, off the start's critical path.
	CRDs func() ([]*unstructured.Unstructured, error)
	// Watched are further CRDs, installed before, whose resources the
	// controllers of these tiers watch: waited for until served, as the
	// Flux CRDs are.
	Watched []*unstructured.Unstructured
	Timeout time.Duration
	// Setup registers the controllers.
	Setup func(ctrl.Manager) error
}

// Start waits for the network tier, applies the CRDs, waits for them,
// then registers the controllers. Every start applies them, so they always
// match the binary. A failure is retried with backoff rather than
// returned: returning would stop the manager, and an API server restarting
// under a bootstrapping operator must not take the bootstrap tier down
// with it.
func (s *Starter) Start(ctx context.Context) error {
	if err := s.waitForNetwork(ctx); err != nil {
		return err
	}
	err := outcome.Backoff(time.Second, outcome.MaxRetryDelay).Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		if err := s.install(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "installing the Flux CRDs, will retry")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil // the manager is stopping
	}
	if err := s.Setup(s.Manager); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func (s *Starter) install(ctx context.Context) error {
	crds, err := s.CRDs()
	if err != nil {
		return err
	}
	return s.Apply.Establish(ctx, s.Probe, crds, append(crds, s.Watched...), s.Timeout)
}

// NeedLeaderElection is false: registering controllers is not acting; the
// controllers themselves wait for the lease.
func (s *Starter) NeedLeaderElection() bool { return false }

// waitForNetwork returns once the cache holds a TenantBundle whose
// NetworkReady is True: on the informer's events, so the addon tier starts
// on the status write that reports the CNI Ready, and at once after a
// restart of an operator whose network tier is up.
func (s *Starter) waitForNetwork(ctx context.Context) error {
	informer, err := s.Manager.GetCache().GetInformer(ctx, &tenantv1.TenantBundle{})
	if err != nil {
		return fmt.Errorf("watching TenantBundles for the network tier: %w", err)
	}
	ready := make(chan struct{})
	var once sync.Once
	observe := func(obj any) {
		if tb, ok := obj.(*tenantv1.TenantBundle); ok && apimeta.IsStatusConditionTrue(tb.Status.Conditions, tenantv1.NetworkReadyCondition) {
			once.Do(func() { close(ready) })
		}
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	})
	if err != nil {
		return err
	}
	defer func() { _ = informer.RemoveEventHandler(reg) }()
	ctrl.LoggerFrom(ctx).Info("the addon tier starts once the network tier is Ready")
	select {
	case <-ready:
	case <-ctx.Done():
	}
	return nil
}
