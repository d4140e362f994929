// Package bootstrap installs the components of the bootstrap tiers in
// process with the Helm SDK. Each reconcile observes every component afresh
// (nothing is trusted from status), maps the observation to a closed State,
// and one switch picks the next Step. Components whose dependencies are
// Ready run; the others wait for the watch event that makes them Ready.
package bootstrap

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/readiness"
)

// State is what a component was observed to be.
type State int

const (
	// StateBlocked: a dependency is not Ready; nothing is done.
	StateBlocked State = iota
	// StateAbsent: no release exists.
	StateAbsent
	// StateLocked: the latest revision is pending: its writer died.
	StateLocked
	// StateFailed: the latest revision failed.
	StateFailed
	// StateOutOfSync: chart or values differ from the deployed revision.
	StateOutOfSync
	// StateDrifted: in sync, but a watch saw a rendered workload deleted or
	// changed by someone else, or the process has not checked it since start.
	StateDrifted
	// StateProgressing: in sync, workloads not Ready yet.
	StateProgressing
	// StateReady: in sync and every workload Ready.
	StateReady
)

func (s State) String() string {
	return [...]string{"Blocked", "Absent", "Locked", "Failed", "OutOfSync", "Drifted", "Progressing", "Ready"}[s]
}

// Component is one component being reconciled: what it should be and what
// was observed of it.
type Component struct {
	Def    bundle.Component
	Chart  *helm.Chart
	Values map[string]any
	// Digest covers chart and effective values; stored on each revision.
	Digest string

	Release *helm.Release
	Objects []*unstructured.Unstructured
	Health  readiness.Result
	// DriftSuspected is set when a watch saw one of its workloads deleted or
	// its spec changed since the last check.
	DriftSuspected bool
	// driftMark is the mark a correction of this pass answers.
	driftMark uint64
}

// Observe maps the observation to a State.
func (c *Component) Observe() State {
	r := c.Release
	switch {
	case r == nil:
		return StateAbsent
	case r.Pending():
		return StateLocked
	case r.Status == "failed":
		return StateFailed
	case r.Digest != c.Digest || r.Status != "deployed":
		return StateOutOfSync
	// A workload missing from the cache without a delete event behind it is
	// cache lag after our own write, not drift: deletions mark the release
	// (and so does a restart, which checks everything once).
	case c.DriftSuspected:
		return StateDrifted
	case !c.Health.Ready:
		return StateProgressing
	default:
		return StateReady
	}
}

// Step is one action on a component. Reconcile returns an error only when
// it did not get the component to a new observable state.
type Step interface {
	Name() string
	Reconcile(ctx stepContext, c *Component) error
	// Done names what the step did once it succeeded ("" for nothing).
	Done() Action
}

// actionForState picks the next step, or nil when there is nothing to do
// until an event arrives.
func actionForState(s State, c *Component, d *deps) Step {
	switch s {
	case StateAbsent:
		return &Install{helm: d.helm}
	case StateLocked:
		return &Unlock{helm: d.helm}
	case StateFailed, StateOutOfSync:
		if c.Release.Deployed {
			return &Upgrade{helm: d.helm}
		}
		return &Install{helm: d.helm}
	case StateDrifted:
		return &CorrectDrift{apply: d.apply, drift: d.drift}
	case StateBlocked, StateProgressing, StateReady:
		return nil
	default:
		panic(fmt.Sprintf("unhandled state %d", s))
	}
}
