package addons

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/outcome"
)

// Starter applies the Flux CRDs and adds the addon tier's controllers to a
// running manager once those CRDs are established. It runs beside the
// bootstrap controller rather than before the manager starts: applying
// and establishing seven large CRDs costs about a second that would
// otherwise sit on the bootstrap's critical path.
type Starter struct {
	Manager ctrl.Manager
	Apply   *apply.Engine
	CRDs    []*unstructured.Unstructured
	Timeout time.Duration
	// Setup registers the controllers.
	Setup func(ctrl.Manager) error
}

// Start applies the CRDs, waits for them, then registers the controllers.
// Every start applies them, so they always match the binary. A failure is
// retried with backoff rather than returned: returning would stop the
// manager, and an API server restarting under a bootstrapping operator
// must not take the bootstrap tier down with it.
func (s *Starter) Start(ctx context.Context) error {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt32, Cap: outcome.MaxRetryDelay}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
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
	if _, err := s.Apply.Correct(ctx, s.CRDs); err != nil {
		return fmt.Errorf("applying the Flux CRDs: %w", err)
	}
	if err := s.Apply.Wait(ctx, s.CRDs, s.Timeout); err != nil {
		return fmt.Errorf("waiting for the Flux CRDs: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: registering controllers is not acting; the
// controllers themselves wait for the lease.
func (s *Starter) NeedLeaderElection() bool { return false }
