package bootstrap

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/helm"
)

type stepContext = context.Context

func (c *Component) request() helm.Request {
	return helm.Request{Namespace: c.Def.Release.Namespace, Name: c.Def.Release.Name,
		Chart: c.Chart, Values: c.Values, Digest: c.Digest}
}

// Install installs the release; after a failed first install it installs
// again over the failed revision (Helm's replace, which leaves that revision
// in the history as failed) instead of uninstalling: a bootstrap component
// is never removed by remediation.
type Install struct{ helm *helm.Client }

func (s *Install) Name() string { return "install" }
func (s *Install) Done() Action { return Installed }

func (s *Install) Reconcile(ctx stepContext, c *Component) error {
	rel, err := s.helm.Install(ctx, c.request())
	if rel != nil {
		c.Release = rel
	}
	if err != nil {
		return fmt.Errorf("install %s/%s: %w", c.Def.Release.Namespace, c.Def.Release.Name, err)
	}
	return nil
}

// Upgrade moves a deployed release to the wanted chart and values.
type Upgrade struct{ helm *helm.Client }

func (s *Upgrade) Name() string { return "upgrade" }
func (s *Upgrade) Done() Action { return Upgraded }

func (s *Upgrade) Reconcile(ctx stepContext, c *Component) error {
	rel, err := s.helm.Upgrade(ctx, c.request())
	if rel != nil {
		c.Release = rel
	}
	if err != nil {
		return fmt.Errorf("upgrade %s/%s: %w", c.Def.Release.Namespace, c.Def.Release.Name, err)
	}
	return nil
}

// Unlock marks failed the pending revision a dead writer of ours left
// behind (see helm.Client.Unlock; somebody else's is left alone), so the
// next step can install or upgrade over it.
type Unlock struct{ helm *helm.Client }

func (s *Unlock) Name() string { return "unlock" }
func (s *Unlock) Done() Action { return Unlocked }

func (s *Unlock) Reconcile(_ stepContext, c *Component) error {
	if err := s.helm.Unlock(c.Release); err != nil {
		return err
	}
	c.Release = nil // re-observed by the loop
	return nil
}

// CorrectDrift re-applies the rendered objects of the deployed revision with
// server-side apply. No Helm revision is written: the release did not
// change, the cluster did.
type CorrectDrift struct {
	apply *apply.Engine
	drift *DriftTracker
	// changed counts the objects the correction changed: a restart checks
	// every component, and one that finds nothing to correct did nothing.
	changed int
}

func (s *CorrectDrift) Name() string { return "correct-drift" }
func (s *CorrectDrift) Done() Action {
	if s.changed == 0 {
		return ""
	}
	return DriftCorrected
}

func (s *CorrectDrift) Reconcile(ctx stepContext, c *Component) error {
	// The engine sorts and edits what it applies; the objects are the
	// revision's, shared with every later reconcile (see helm.Objects).
	objs := make([]*unstructured.Unstructured, len(c.Objects))
	for i, o := range c.Objects {
		objs[i] = o.DeepCopy()
	}
	cs, err := s.apply.Correct(ctx, objs)
	if err != nil {
		return fmt.Errorf("restoring %s: %w", c.Def.Name, err)
	}
	for _, e := range cs.Entries {
		if e.Action != ssa.UnchangedAction {
			s.changed++
		}
	}
	s.drift.Corrected(c.Def.Release.Namespace, c.Def.Release.Name, c.driftMark)
	c.DriftSuspected = false
	return nil
}
