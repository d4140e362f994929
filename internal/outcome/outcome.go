// Package outcome classifies reconcile errors the way every controller here
// reports them: terminal (Stalled, only a spec change helps) or retrying
// (backoff, may heal on its own); waiting is not an error at all.
package outcome

import (
	"errors"
	"fmt"

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
