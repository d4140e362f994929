package addons

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cozystack/tenant-operator/internal/apply"
)

// Starter adds the addon tier's controllers to a running manager once the
// Flux CRDs they watch are established. The operator applies those CRDs at
// start without waiting for them, so the bootstrap controller starts
// right away: establishing seven CRDs costs about a second that would
// otherwise sit on the bootstrap's critical path.
type Starter struct {
	Manager ctrl.Manager
	Apply   *apply.Engine
	CRDs    []*unstructured.Unstructured
	Timeout time.Duration
	// Setup registers the controllers.
	Setup func(ctrl.Manager) error
}

// Start waits for the CRDs, then registers the controllers; an error stops
// the manager (and the process: the addon tier cannot run without them).
func (s *Starter) Start(ctx context.Context) error {
	if err := s.Apply.Wait(ctx, s.CRDs, s.Timeout); err != nil {
		return fmt.Errorf("waiting for the Flux CRDs: %w", err)
	}
	if err := s.Setup(s.Manager); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: registering controllers is not acting; the
// controllers themselves wait for the lease.
func (s *Starter) NeedLeaderElection() bool { return false }
