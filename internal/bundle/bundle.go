// Package bundle reads bundle definitions (data in bundles/ and variants/)
// and answers the pure questions about them: which components are enabled,
// in what order, with which values. No cluster access here, so all of it is
// unit-tested with tables.
package bundle

import (
	"fmt"
	"io/fs"
	"path"
	"sort"

	"sigs.k8s.io/yaml"
)

// Tiers, in the order a cluster comes up.
const (
	TierNetwork = "network"
	TierCloud   = "cloud"
	TierAddons  = "addons"
)

// Definition is a bundle: a DAG of components.
type Definition struct {
	Name       string         `json:"name"`
	Settings   map[string]any `json:"settings,omitempty"`
	Components []Component    `json:"components"`
}

// Component is one Helm release of the bundle.
type Component struct {
	Name      string   `json:"name"`
	Tier      string   `json:"tier"`
	DependsOn []string `json:"dependsOn,omitempty"`
	// If and Unless name boolean facts that switch the component on or off.
	If     string `json:"if,omitempty"`
	Unless string `json:"unless,omitempty"`

	Chart   ChartRef       `json:"chart"`
	Release ReleaseRef     `json:"release"`
	Values  map[string]any `json:"values,omitempty"`
	// ValuesIf are values merged over Values while the named boolean fact
	// is true (Cilium's Gateway API support with gatewayAPI).
	ValuesIf map[string]map[string]any `json:"valuesIf,omitempty"`
	// Facts maps a dotted values path to the name of a cluster fact.
	Facts map[string]string `json:"facts,omitempty"`
}

// ChartRef is either a directory of the packages artifact (Path, with
// Libraries and ValuesFiles as Cozystack's PackageSource has them) or a chart
// in a Helm repository (Repo, Name, Version).
type ChartRef struct {
	Path        string            `json:"path,omitempty"`
	Libraries   map[string]string `json:"libraries,omitempty"`
	ValuesFiles []string          `json:"valuesFiles,omitempty"`

	Repo    string `json:"repo,omitempty"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Fallback is a version constraint used only when nothing matches
	// Version (a chart that follows the Kubernetes minor but has no release
	// for the cluster's minor yet); the component's status says so.
	Fallback string `json:"fallback,omitempty"`
}

// ReleaseRef names the Helm release.
type ReleaseRef struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// Load reads <name>/bundle.yaml from fsys and validates it.
func Load(fsys fs.FS, name string) (*Definition, error) {
	raw, err := fs.ReadFile(fsys, path.Join(name, "bundle.yaml"))
	if err != nil {
		return nil, fmt.Errorf("bundle %q: %w", name, err)
	}
	d := &Definition{}
	if err := yaml.UnmarshalStrict(raw, d); err != nil {
		return nil, fmt.Errorf("bundle %q: %w", name, err)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("bundle %q: %w", name, err)
	}
	return d, nil
}

// Validate checks names, references, facts and that the graph is acyclic.
func (d *Definition) Validate() error {
	byName := map[string]*Component{}
	for i := range d.Components {
		c := &d.Components[i]
		if c.Name == "" {
			return fmt.Errorf("component %d has no name", i)
		}
		if byName[c.Name] != nil {
			return fmt.Errorf("component %q is defined twice", c.Name)
		}
		byName[c.Name] = c
		switch c.Tier {
		case TierNetwork, TierCloud, TierAddons:
		default:
			return fmt.Errorf("component %q: unknown tier %q", c.Name, c.Tier)
		}
		if (c.Chart.Path == "") == (c.Chart.Repo == "") {
			return fmt.Errorf("component %q: chart needs exactly one of path or repo", c.Name)
		}
		if c.Release.Name == "" || c.Release.Namespace == "" {
			return fmt.Errorf("component %q: release needs a name and a namespace", c.Name)
		}
		for p, f := range c.Facts {
			if !KnownFact(f) {
				return fmt.Errorf("component %q: values path %s names unknown fact %q", c.Name, p, f)
			}
		}
		for f := range c.ValuesIf {
			if !KnownFact(f) {
				return fmt.Errorf("component %q: valuesIf names unknown fact %q", c.Name, f)
			}
		}
		for _, f := range []string{c.If, c.Unless} {
			if f != "" && !KnownFact(f) {
				return fmt.Errorf("component %q: condition names unknown fact %q", c.Name, f)
			}
		}
	}
	for _, c := range d.Components {
		for _, dep := range c.DependsOn {
			if byName[dep] == nil {
				return fmt.Errorf("component %q depends on unknown component %q", c.Name, dep)
			}
		}
	}
	_, err := d.order()
	return err
}

// Component returns the named component, or nil.
func (d *Definition) Component(name string) *Component {
	for i := range d.Components {
		if d.Components[i].Name == name {
			return &d.Components[i]
		}
	}
	return nil
}

// order returns the components so that each comes after its dependencies,
// or an error naming a cycle.
func (d *Definition) order() ([]Component, error) {
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	var out []Component
	var visit func(c *Component) error
	visit = func(c *Component) error {
		switch state[c.Name] {
		case 1:
			return fmt.Errorf("dependency cycle through %q", c.Name)
		case 2:
			return nil
		}
		state[c.Name] = 1
		deps := append([]string(nil), c.DependsOn...)
		sort.Strings(deps)
		for _, dep := range deps {
			if err := visit(d.Component(dep)); err != nil {
				return err
			}
		}
		state[c.Name] = 2
		out = append(out, *c)
		return nil
	}
	for i := range d.Components {
		if err := visit(&d.Components[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Plan is the enabled, ordered set of components for a cluster. Dependencies
// on components that are switched off are dropped: CoreDNS depends on
// kube-proxy only where kube-proxy runs.
func (d *Definition) Plan(facts Facts) ([]Component, error) {
	ordered, err := d.order()
	if err != nil {
		return nil, err
	}
	enabled := map[string]bool{}
	var out []Component
	for _, c := range ordered {
		if c.If != "" && !facts.Bool(c.If) || c.Unless != "" && facts.Bool(c.Unless) {
			continue
		}
		enabled[c.Name] = true
		var deps []string
		for _, dep := range c.DependsOn {
			if enabled[dep] {
				deps = append(deps, dep)
			}
		}
		c.DependsOn = deps
		out = append(out, c)
	}
	return out, nil
}

// String names the chart for status: its path, or repo/name@version.
func (c ChartRef) String() string {
	if c.Path != "" {
		return c.Path
	}
	return c.Repo + "/" + c.Name + "@" + c.Version
}
