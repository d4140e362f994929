// Package outcome classifies reconcile errors the way every controller here
// reports them: terminal (Stalled, only a spec change helps) or retrying
// (backoff, may heal on its own); waiting is not an error at all.
package outcome

import (
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// stalled is a problem only a change of spec (or of the artifact it names)
// can fix. It carries the condition reason; the message names the field.
type stalled struct {
	reason string
	err    error
}

func (s *stalled) Error() string { return s.err.Error() }
func (s *stalled) Unwrap() error { return s.err }

// Terminal marks err Stalled with reason. controller-runtime does not
// requeue a terminal error: the next spec change (a new generation) or a
// watch event reconciles again.
func Terminal(reason string, format string, args ...any) error {
	return reconcile.TerminalError(&stalled{reason: reason, err: fmt.Errorf(format, args...)})
}

// retrying is a failure that may heal on its own (a registry outage, an API
// conflict); it is returned so controller-runtime backs off.
type retrying struct {
	reason string
	err    error
}

func (r *retrying) Error() string { return r.err.Error() }
func (r *retrying) Unwrap() error { return r.err }

func Retry(reason string, err error) error { return &retrying{reason: reason, err: err} }

// Classify returns the condition reason of err and whether it is terminal.
func Classify(err error) (reason string, isTerminal bool) {
	var s *stalled
	if errors.As(err, &s) {
		return s.reason, true
	}
	var r *retrying
	if errors.As(err, &r) {
		return r.reason, false
	}
	return "ReconciliationFailed", false
}

// MaxRetryDelay caps the backoff of retrying errors. controller-runtime's
// default grows to 1000 s, so a registry that was down for a minute would
// leave a bootstrapping cluster waiting up to another minute after it came
// back; a tenant has nothing else to do meanwhile, and one retry per 10 s
// per failing object costs the registry or API server nothing.
const MaxRetryDelay = 10 * time.Second

// RateLimiter is the workqueue rate limiter of every tenant-side controller:
// per-object exponential backoff from 5 ms up to MaxRetryDelay.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxRetryDelay)
}

// Backoff is the delay between the tries of a step that must not give up
// before its context ends: first, doubled on every try up to limit, then
// limit for as long as it takes. Use it as Backoff(...).Until(ctx, true,
// true, condition). wait.ExponentialBackoff is not that: it counts the cap
// as the end of its steps and returns ErrWaitTimeout there, which made a
// 50 ms..2 s backoff give up on a restarting API server after 3 s.
func Backoff(first, limit time.Duration) wait.DelayFunc {
	return wait.Backoff{Duration: first, Factor: 2, Cap: limit, Steps: math.MaxInt32}.DelayFunc()
}

// AfterStatusWrite is what a reconcile returns once it has tried to write
// the status of its outcome: the outcome itself when the write succeeded;
// otherwise a retrying error, even for a terminal outcome. A terminal
// error is not requeued, so a Stalled verdict whose write failed would
// never reach the status at all.
func AfterStatusWrite(reconcileErr, writeErr error) error {
	if writeErr == nil {
		return reconcileErr
	}
	if reconcileErr == nil {
		return Retry("StatusWriteFailed", fmt.Errorf("writing status: %w", writeErr))
	}
	reason, _ := Classify(reconcileErr)
	return Retry(reason, fmt.Errorf("writing status: %w (reconciling: %s)", writeErr, reconcileErr.Error()))
}
