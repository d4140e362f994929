package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// AddonPrefix names the PackageSource and Package of an addon.
const AddonPrefix = "addon."

// Addons is a bundle's addon catalogue (<bundle>/addons.yaml).
type Addons struct {
	Libraries []cozyv1.Library `json:"libraries,omitempty"`
	// WaitStrategy is helm-controller's wait strategy for every component
	// that names none and has no health check expressions (which only the
	// poller evaluates).
	WaitStrategy string  `json:"waitStrategy,omitempty"`
	Addons       []Addon `json:"addons"`

	byName map[string]*Addon
}

// Addon is one switchable addon: a Package of its own.
type Addon struct {
	Name    string `json:"name"`
	Default bool   `json:"default,omitempty"`
	// AfterNetwork holds the addon until the network tier is Ready.
	AfterNetwork bool     `json:"afterNetwork,omitempty"`
	DependsOn    []string `json:"dependsOn,omitempty"`
	// After orders the addon after others only while they are enabled,
	// without enabling them (Cozystack's conditional dependsOn).
	After      []string           `json:"after,omitempty"`
	Components []cozyv1.Component `json:"components"`

	// Values are the values of the main (first) component that the
	// management side passes today; strings may name facts as ${fact}.
	Values map[string]any `json:"values,omitempty"`
	// ValuesWhenEnabled are values taken while another addon is enabled
	// (gpu-operator's device plugin is off while HAMi runs).
	ValuesWhenEnabled map[string]map[string]any `json:"valuesWhenEnabled,omitempty"`
	// ValuesIf are values taken while a boolean fact of the cluster is true
	// (cert-manager's Gateway API support with gatewayAPI).
	ValuesIf map[string]map[string]any `json:"valuesIf,omitempty"`
	// ValuesOf names another addon whose TenantBundle values this one takes
	// too, before its own (cert-manager's override reaches its CRDs chart).
	ValuesOf string `json:"valuesOf,omitempty"`
}

// Needs lists the addons this one waits for: its dependencies, and those
// it comes after that enabled says are on.
func (a *Addon) Needs(enabled func(string) bool) []string {
	out := slices.Clone(a.DependsOn)
	for _, d := range a.After {
		if enabled(d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// ChartRef is an addon component's chart, its libraries resolved to their
// directories in the packages tree.
func (a *Addons) ChartRef(c cozyv1.Component) ChartRef {
	ref := ChartRef{Path: c.Path, ValuesFiles: c.ValuesFiles}
	for _, name := range c.Libraries {
		for _, l := range a.Libraries {
			if l.Name == name {
				if ref.Libraries == nil {
					ref.Libraries = map[string]string{}
				}
				ref.Libraries[name] = l.Path
			}
		}
	}
	return ref
}

// PackageName is the name of the addon's PackageSource and Package.
func (a *Addon) PackageName() string { return AddonPrefix + a.Name }

// AddonName returns the addon a Package name stands for, if any.
func AddonName(pkg string) (string, bool) {
	return strings.CutPrefix(pkg, AddonPrefix)
}

// LoadAddons reads <name>/addons.yaml; a bundle without one has no addons.
func LoadAddons(fsys fs.FS, name string) (*Addons, error) {
	a := &Addons{}
	raw, err := fs.ReadFile(fsys, path.Join(name, "addons.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return a, a.index()
	}
	if err != nil {
		return nil, fmt.Errorf("addons of bundle %q: %w", name, err)
	}
	if err := yaml.UnmarshalStrict(raw, a); err != nil {
		return nil, fmt.Errorf("addons of bundle %q: %w", name, err)
	}
	if err := a.index(); err != nil {
		return nil, fmt.Errorf("addons of bundle %q: %w", name, err)
	}
	return a, nil
}

func (a *Addons) index() error {
	a.byName = map[string]*Addon{}
	for i := range a.Addons {
		ad := &a.Addons[i]
		if ad.Name == "" || a.byName[ad.Name] != nil {
			return fmt.Errorf("addon %d: missing or duplicate name %q", i, ad.Name)
		}
		if len(ad.Components) == 0 {
			return fmt.Errorf("addon %q has no components", ad.Name)
		}
		for j := range ad.Components {
			in := ad.Components[j].Install
			if in != nil && in.WaitStrategy == "" && len(in.HealthCheckExprs) == 0 {
				in.WaitStrategy = a.WaitStrategy
			}
		}
		a.byName[ad.Name] = ad
	}
	for _, ad := range a.Addons {
		for _, d := range ad.DependsOn {
			if a.byName[d] == nil {
				return fmt.Errorf("addon %q depends on unknown addon %q", ad.Name, d)
			}
		}
		for _, d := range ad.After {
			if a.byName[d] == nil {
				return fmt.Errorf("addon %q: after names unknown addon %q", ad.Name, d)
			}
		}
		for other := range ad.ValuesWhenEnabled {
			if a.byName[other] == nil {
				return fmt.Errorf("addon %q: valuesWhenEnabled names unknown addon %q", ad.Name, other)
			}
		}
		for f := range ad.ValuesIf {
			if !KnownFact(f) {
				return fmt.Errorf("addon %q: valuesIf names unknown fact %q", ad.Name, f)
			}
		}
		if ad.ValuesOf != "" && a.byName[ad.ValuesOf] == nil {
			return fmt.Errorf("addon %q: valuesOf names unknown addon %q", ad.Name, ad.ValuesOf)
		}
	}
	// A cycle would make every addon on it wait forever.
	if _, err := a.order(a.Names()); err != nil {
		return err
	}
	return nil
}

// Get returns the named addon.
func (a *Addons) Get(name string) *Addon { return a.byName[name] }

// Names lists the addons in definition order.
func (a *Addons) Names() []string {
	out := make([]string, 0, len(a.Addons))
	for _, ad := range a.Addons {
		out = append(out, ad.Name)
	}
	return out
}

// Dependents lists the enabled addons that depend on name directly.
func (a *Addons) Dependents(name string, enabled map[string]bool) []string {
	var out []string
	for _, ad := range a.Addons {
		if enabled[ad.Name] && slices.Contains(ad.Needs(func(o string) bool { return enabled[o] }), name) {
			out = append(out, ad.Name)
		}
	}
	return out
}

// order returns names dependencies first, or an error naming a cycle.
func (a *Addons) order(names []string) ([]string, error) {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	listed := map[string]bool{}
	for _, n := range names {
		listed[n] = true
	}
	var out []string
	var visit func(n string, trail []string) error
	visit = func(n string, trail []string) error {
		switch state[n] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("addon dependency cycle: %s", strings.Join(append(trail, n), " -> "))
		}
		state[n] = visiting
		for _, d := range a.byName[n].Needs(func(o string) bool { return listed[o] }) {
			if err := visit(d, append(trail, n)); err != nil {
				return err
			}
		}
		state[n] = done
		out = append(out, n)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Choice is what the TenantBundle says of one addon.
type Choice struct {
	Enabled *bool
	Values  *apiextensionsv1.JSON
}

// ChoicesOf reads a TenantBundle's spec.addons as choices.
func ChoicesOf(spec map[string]tenantv1.AddonSpec) map[string]Choice {
	out := make(map[string]Choice, len(spec))
	for name, a := range spec {
		out[name] = Choice{Enabled: a.Enabled, Values: a.Values}
	}
	return out
}

// Selection is the set of addons to run, dependencies first.
type Selection struct {
	Enabled []*Addon
	// Implied lists addons switched on only because an enabled addon
	// depends on them.
	Implied []string
}

// RefusedError says why a choice cannot be carried out. The cluster keeps
// running what it ran: nothing is removed because of a refused choice.
type RefusedError struct {
	Reason  string
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// Refusal reasons: the TenantBundle reports them as they are.
const (
	ReasonUnknownAddon       = tenantv1.ReasonUnknownAddon
	ReasonDependencyDisabled = tenantv1.ReasonDependencyDisabled
)

// Select resolves the choices against the catalogue: defaults, then the
// choices, then the dependencies of everything enabled. Unknown names and a
// disabled addon that an enabled one needs are refused.
func (a *Addons) Select(choices map[string]Choice) (*Selection, error) {
	var unknown []string
	for name := range choices {
		if a.byName[name] == nil {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, &RefusedError{Reason: ReasonUnknownAddon, Message: fmt.Sprintf(
			"spec.addons: unknown addon(s) %s; known: %s", strings.Join(unknown, ", "), strings.Join(a.Names(), ", "))}
	}
	enabled := map[string]bool{}
	for _, ad := range a.Addons {
		on := ad.Default
		if c, ok := choices[ad.Name]; ok && c.Enabled != nil {
			on = *c.Enabled
		}
		enabled[ad.Name] = on
	}
	explicitlyOff := func(n string) bool {
		c, ok := choices[n]
		return ok && c.Enabled != nil && !*c.Enabled
	}
	sel := &Selection{}
	var refusals []string
	// Walk dependencies until nothing new is switched on.
	for changed := true; changed; {
		changed = false
		for _, ad := range a.Addons {
			if !enabled[ad.Name] {
				continue
			}
			for _, d := range ad.DependsOn {
				switch {
				case enabled[d]:
				case explicitlyOff(d):
					refusals = append(refusals, fmt.Sprintf("%s is disabled but needed by %s", d, ad.Name))
				default:
					enabled[d], changed = true, true
					sel.Implied = append(sel.Implied, d)
				}
			}
		}
		if len(refusals) > 0 {
			break
		}
	}
	if len(refusals) > 0 {
		sort.Strings(refusals)
		return nil, &RefusedError{Reason: ReasonDependencyDisabled, Message: fmt.Sprintf(
			"spec.addons: %s; enable it or disable what needs it", strings.Join(dedupe(refusals), "; "))}
	}
	var names []string
	for _, ad := range a.Addons {
		if enabled[ad.Name] {
			names = append(names, ad.Name)
		}
	}
	ordered, err := a.order(names)
	if err != nil {
		return nil, err
	}
	for _, n := range ordered {
		sel.Enabled = append(sel.Enabled, a.byName[n])
	}
	sort.Strings(sel.Implied)
	sel.Implied = dedupe(sel.Implied)
	return sel, nil
}

// IsEnabled says whether the named addon is in the selection.
func (s *Selection) IsEnabled(name string) bool {
	return slices.ContainsFunc(s.Enabled, func(a *Addon) bool { return a.Name == name })
}

func dedupe(sorted []string) []string { return slices.Compact(sorted) }

// TreePaths lists the packages-tree directories the bundles of fsys, their
// addon catalogues and the variants name: charts and libraries, the part of
// an artifact that is read first.
func TreePaths(fsys fs.FS, variants map[string]*Variant) ([]string, error) {
	var out []string
	err := walk(fsys, variants, func(c Component) {
		if c.Chart.Path != "" {
			out = append(out, c.Chart.Path)
		}
		for _, l := range c.Chart.Libraries {
			out = append(out, l)
		}
	}, func(addons *Addons) {
		for _, l := range addons.Libraries {
			out = append(out, l.Path)
		}
		for _, a := range addons.Addons {
			for _, c := range a.Components {
				out = append(out, c.Path)
			}
		}
	})
	slices.Sort(out)
	return slices.Compact(out), err
}

// walk calls component for every component of every bundle of fsys and of
// every variant, and addons for every bundle's addon catalogue.
func walk(fsys fs.FS, variants map[string]*Variant, component func(Component), addons func(*Addons)) error {
	files, err := fs.Glob(fsys, "*/bundle.yaml")
	if err != nil {
		return err
	}
	for _, f := range files {
		name := path.Dir(f)
		def, err := Load(fsys, name)
		if err != nil {
			return err
		}
		for _, c := range def.Components {
			component(c)
		}
		if addons == nil {
			continue
		}
		catalogue, err := LoadAddons(fsys, name)
		if err != nil {
			return err
		}
		addons(catalogue)
	}
	for _, v := range variants {
		for _, c := range v.Components {
			component(c)
		}
	}
	return nil
}

// Under returns whether name is one of dirs or inside one.
func Under(dirs []string) func(name string) bool {
	return func(name string) bool {
		for _, d := range dirs {
			if name == d || strings.HasPrefix(name, d+"/") {
				return true
			}
		}
		return false
	}
}

// PlatformNamespaces lists the namespaces the platform's own components run
// in: those of every bundle's components and addons, every variant's, and
// Kubernetes' own. A catalog app placed in one of them shares it with them.
func PlatformNamespaces(fsys fs.FS, variants map[string]*Variant) ([]string, error) {
	out := []string{"default", "kube-node-lease", "kube-public", "kube-system"}
	err := walk(fsys, variants, func(c Component) { out = append(out, c.Release.Namespace) }, func(addons *Addons) {
		for _, a := range addons.Addons {
			for _, c := range a.Components {
				if c.Install != nil && c.Install.Namespace != "" {
					out = append(out, c.Install.Namespace)
				}
			}
		}
	})
	slices.Sort(out)
	return slices.Compact(out), err
}

// BootstrapReleases lists the releases ("namespace/name") of every bundle's
// and variant's components: the operator installs them itself, so no
// Package may name one.
func BootstrapReleases(fsys fs.FS, variants map[string]*Variant) ([]string, error) {
	var out []string
	err := walk(fsys, variants, func(c Component) { out = append(out, c.Release.Namespace+"/"+c.Release.Name) }, nil)
	slices.Sort(out)
	return slices.Compact(out), err
}
