package bootstrap

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/readiness"
)

type deps struct {
	helm   *helm.Client
	apply  *apply.Engine
	health *readiness.Checker
	drift  *DriftTracker
}

// Engine reconciles a planned set of components.
type Engine struct {
	deps
	Drift *DriftTracker
}

// NewEngine wires an engine.
func NewEngine(h *helm.Client, a *apply.Engine, health *readiness.Checker, drift *DriftTracker) *Engine {
	return &Engine{deps: deps{helm: h, apply: a, health: health, drift: drift}, Drift: drift}
}

// Result is the outcome for one component.
type Result struct {
	Name, Tier string
	// Release is the component's Helm release.
	ReleaseNamespace, ReleaseName string
	State                         State
	Revision                      int
	ChartVersion                  string
	Message                       string
	Err                           error
	// Actions are what the steps of this reconcile did, in order.
	Actions []Action
}

// Action is what a step did to a component ("" for nothing).
type Action string

// The actions, by what they did.
const (
	Installed      Action = "Installed"
	Upgraded       Action = "Upgraded"
	Unlocked       Action = "Unlocked"
	DriftCorrected Action = "DriftCorrected"
)

// Ready reports whether the component's workloads are all Ready.
func (r Result) Ready() bool { return r.State == StateReady }

// Run reconciles components given in dependency order. Components are
// grouped into waves (a wave holds those whose dependencies are in earlier
// waves) and each wave runs concurrently, so independent components (the
// OpenStack CCM and the CNI, say) install side by side.
func (e *Engine) Run(ctx context.Context, comps []*Component) []Result {
	results := make(map[string]Result, len(comps))
	for _, wave := range waves(comps) {
		var mu sync.Mutex
		g, gctx := errgroup.WithContext(ctx)
		for _, c := range wave {
			if blocker := firstNotReady(c.Def.DependsOn, results); blocker != "" {
				results[c.Def.Name] = Result{Name: c.Def.Name, Tier: c.Def.Tier, State: StateBlocked,
					Message: fmt.Sprintf("waiting for %s to be Ready", blocker)}
				continue
			}
			g.Go(func() error {
				r := e.reconcile(gctx, c)
				mu.Lock()
				results[c.Def.Name] = r
				mu.Unlock()
				return nil
			})
		}
		_ = g.Wait()
	}
	out := make([]Result, 0, len(comps))
	for _, c := range comps {
		out = append(out, results[c.Def.Name])
	}
	return out
}

// reconcile runs steps until the component waits for an event. The same
// step never runs twice in one reconcile: if it did not move the state on,
// running it again would not either.
func (e *Engine) reconcile(ctx context.Context, c *Component) Result {
	log := ctrl.LoggerFrom(ctx).WithValues("component", c.Def.Name)
	ran := map[string]bool{}
	var actions []Action
	result := func(st State, err error) Result {
		r := e.result(c, st, err)
		r.Actions = actions
		return r
	}
	wrote := false
	for {
		if err := e.observe(ctx, c, wrote); err != nil {
			return result(StateBlocked, err)
		}
		st := c.Observe()
		step := actionForState(st, c, &e.deps)
		if step == nil {
			log.V(1).Info("waiting", "state", st.String(), "health", c.Health.Message)
			return result(st, nil)
		}
		if ran[step.Name()] {
			return result(st, fmt.Errorf("%s of %s did not converge: still %s", step.Name(), c.Def.Name, st))
		}
		ran[step.Name()] = true
		log.Info("running step", "step", step.Name(), "state", st.String())
		if err := step.Reconcile(ctx, c); err != nil {
			return result(st, err)
		}
		// The cache may still hold the workloads as they were before.
		done := step.Done()
		if done != "" {
			actions = append(actions, done)
		}
		wrote = done != Unlocked
		if done == Installed || done == Upgraded {
			// Helm just wrote every object; there is nothing to correct.
			e.Drift.Checked(c.Def.Release.Namespace, c.Def.Release.Name)
		}
	}
}

func (e *Engine) observe(ctx context.Context, c *Component, live bool) error {
	rel, err := e.helm.Observe(ctx, c.Def.Release.Namespace, c.Def.Release.Name)
	if err != nil {
		return err
	}
	c.Release, c.Objects, c.Health = rel, nil, readiness.Result{}
	if rel == nil || rel.Status != "deployed" || rel.Digest != c.Digest {
		return nil
	}
	if c.Objects, err = e.helm.Objects(rel); err != nil {
		return err
	}
	check := e.health.Check
	if live {
		check = e.health.CheckLive
	}
	if c.Health, err = check(ctx, c.Objects); err != nil {
		return err
	}
	c.DriftSuspected, c.driftMark = e.Drift.Suspected(rel.Namespace, rel.Name)
	return nil
}

func (e *Engine) result(c *Component, st State, err error) Result {
	r := Result{Name: c.Def.Name, Tier: c.Def.Tier, State: st, Err: err,
		ReleaseNamespace: c.Def.Release.Namespace, ReleaseName: c.Def.Release.Name}
	if c.Release != nil {
		r.Revision, r.ChartVersion = c.Release.Revision, c.Release.ChartVersion
	}
	switch {
	case err != nil:
		r.Message = err.Error()
	case st == StateReady:
		r.Message = fmt.Sprintf("revision %d ready", r.Revision)
	default:
		r.Message = c.Health.Message
	}
	return r
}

func firstNotReady(names []string, results map[string]Result) string {
	for _, n := range names {
		if !results[n].Ready() {
			return n
		}
	}
	return ""
}

// waves groups components (given in dependency order) by depth.
func waves(comps []*Component) [][]*Component {
	depth := map[string]int{}
	var out [][]*Component
	for _, c := range comps {
		d := 0
		for _, dep := range c.Def.DependsOn {
			d = max(d, depth[dep]+1)
		}
		depth[c.Def.Name] = d
		for len(out) <= d {
			out = append(out, nil)
		}
		out[d] = append(out[d], c)
	}
	return out
}

// DriftTracker remembers which releases a watch saw changed. A release never
// checked since the process started counts as suspected, so a restart
// re-verifies everything once. A suspicion stays until a correction has
// succeeded: a correction that fails (an API blip, a webhook timeout) is
// tried again on the next pass, not forgotten.
type DriftTracker struct {
	mu      sync.Mutex
	checked map[string]bool
	// marks counts the marks of each release; a correction clears only
	// the marks it saw, not one that arrived while it ran.
	marks   map[string]uint64
	cleared map[string]uint64
}

// NewDriftTracker returns an empty tracker.
func NewDriftTracker() *DriftTracker {
	return &DriftTracker{checked: map[string]bool{}, marks: map[string]uint64{}, cleared: map[string]uint64{}}
}

func key(ns, name string) string { return ns + "/" + name }

// Mark records that a workload of the release was deleted or edited.
func (d *DriftTracker) Mark(ns, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.marks[key(ns, name)]++
}

// Checked records that the release's objects are known to be as rendered:
// Helm just wrote every one of them.
func (d *DriftTracker) Checked(ns, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := key(ns, name)
	d.checked[k] = true
	d.cleared[k] = d.marks[k]
}

// Suspected reports whether the release needs a drift check, and the mark
// its check will answer (see Corrected). It clears nothing.
func (d *DriftTracker) Suspected(ns, name string) (bool, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := key(ns, name)
	return !d.checked[k] || d.marks[k] != d.cleared[k], d.marks[k]
}

// Corrected records that a correction answering mark succeeded.
func (d *DriftTracker) Corrected(ns, name string, mark uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := key(ns, name)
	d.checked[k] = true
	d.cleared[k] = max(d.cleared[k], mark)
}

// Summary joins messages of components that are not Ready.
func Summary(results []Result) string {
	var parts []string
	for _, r := range results {
		if !r.Ready() {
			parts = append(parts, fmt.Sprintf("%s: %s", r.Name, r.Message))
		}
	}
	return strings.Join(parts, "; ")
}
