package bundle

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// BackendLabel is the Node label naming the node group's backend. The
// management side sets it on the MachineDeployment's machine template;
// Cluster API copies node.cluster.x-k8s.io/* labels onto the Nodes, so it
// appears without kubelet self-labelling (which NodeRestriction limits).
const BackendLabel = "node.cluster.x-k8s.io/backend"

// Variant is a per-backend set of components, chosen per cluster.
type Variant struct {
	Name string `json:"name"`
	// Detect says how Nodes show this backend.
	Detect Detect `json:"detect,omitempty"`
	// WaitFor names effects on the nodes that the tenant waits for before
	// the cloud tier counts as Ready.
	WaitFor []string `json:"waitFor,omitempty"`
	// ProvidedByPlatform are the backend's parts that run on the management
	// side and that nothing here installs; the tenant only waits for their
	// effects.
	ProvidedByPlatform []PlatformPart `json:"providedByPlatform,omitempty"`
	// Credentials, when set, says the variant needs the tenant-owned
	// credentials Secret, and in which namespace its consumers run (a pod
	// can only mount a Secret of its own namespace, and the Secret is never
	// copied).
	Credentials *Credentials `json:"credentials,omitempty"`
	Components  []Component  `json:"components,omitempty"`
}

// PlatformPart is a part of the backend run by the platform.
type PlatformPart struct {
	Name string `json:"name"`
	// Effect is the WaitFor effect this part brings about, if any.
	Effect string `json:"effect,omitempty"`
	// Where says where the platform runs it, for people reading the status.
	Where string `json:"where,omitempty"`
}

// ProvidedBy names the platform parts that bring effect about ("" when
// none is listed).
func (v *Variant) ProvidedBy(effect string) string {
	var names []string
	for _, p := range v.ProvidedByPlatform {
		if p.Effect == effect {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ")
}

// Credentials describes where a variant's credentials Secret must live.
type Credentials struct {
	Namespace string `json:"namespace"`
}

// With returns the bundle extended by the variant's components, validated
// as one graph (variant components depend on bundle ones, e.g. cilium).
func (d *Definition) With(v *Variant) (*Definition, error) {
	out := &Definition{Name: d.Name, Settings: d.Settings}
	out.Components = append(append([]Component(nil), d.Components...), v.Components...)
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("bundle %q with variant %q: %w", d.Name, v.Name, err)
	}
	return out, nil
}

// Detect is a variant's detection rule: the value of BackendLabel, then the
// scheme of spec.providerID (the part before "://").
type Detect struct {
	Backend           string   `json:"backend,omitempty"`
	ProviderIDSchemes []string `json:"providerIDSchemes,omitempty"`
}

// Effects a variant may wait for.
const (
	EffectProviderID  = "providerID"
	EffectInitialized = "nodesInitialized"
)

// LoadVariants reads every <dir>/variant.yaml of each fsys; a later fsys may
// add variants but not redefine one.
func LoadVariants(fsyss ...fs.FS) (map[string]*Variant, error) {
	out := map[string]*Variant{}
	for _, fsys := range fsyss {
		files, err := fs.Glob(fsys, "*/variant.yaml")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			raw, err := fs.ReadFile(fsys, f)
			if err != nil {
				return nil, err
			}
			v := &Variant{}
			if err := yaml.UnmarshalStrict(raw, v); err != nil {
				return nil, fmt.Errorf("variant %s: %w", f, err)
			}
			if v.Name != path.Dir(f) {
				return nil, fmt.Errorf("variant %s: name %q must match its folder", f, v.Name)
			}
			if out[v.Name] != nil {
				return nil, fmt.Errorf("variant %q is defined twice", v.Name)
			}
			for _, e := range v.WaitFor {
				if e != EffectProviderID && e != EffectInitialized {
					return nil, fmt.Errorf("variant %q: unknown waitFor %q", v.Name, e)
				}
			}
			for _, p := range v.ProvidedByPlatform {
				if p.Name == "" || p.Effect != "" && !slices.Contains(v.WaitFor, p.Effect) {
					return nil, fmt.Errorf("variant %q: providedByPlatform %q needs a name and an effect listed in waitFor", v.Name, p.Name)
				}
			}
			out[v.Name] = v
		}
	}
	return out, nil
}

// NodeInfo is what detection reads of a Node.
type NodeInfo struct {
	Name, Backend, ProviderID string
}

// Detection is the outcome of reading the Nodes.
type Detection struct {
	// Variant is set when every Node with a signal points at one variant.
	Variant string
	// Unknown explains why nothing could be decided yet.
	Unknown string
	// Mixed lists nodes per variant when Nodes disagree.
	Mixed map[string][]string
}

// DetectVariant reads the Nodes: the backend label first, then the
// providerID scheme. Nodes without either signal are ignored (they are
// still joining); no signal at all is Unknown, two variants are Mixed.
func DetectVariant(variants map[string]*Variant, nodes []NodeInfo) Detection {
	if len(nodes) == 0 {
		return Detection{Unknown: "no nodes have joined yet"}
	}
	byVariant := map[string][]string{}
	var unmatched []string
	for _, n := range nodes {
		name := matchVariant(variants, n)
		if name == "" {
			if n.Backend != "" || n.ProviderID != "" {
				unmatched = append(unmatched, fmt.Sprintf("%s (backend %q, providerID %q)", n.Name, n.Backend, n.ProviderID))
			}
			continue
		}
		byVariant[name] = append(byVariant[name], n.Name)
	}
	switch {
	case len(byVariant) > 1:
		for _, v := range byVariant {
			sort.Strings(v)
		}
		return Detection{Mixed: byVariant}
	case len(byVariant) == 1:
		for name := range byVariant {
			return Detection{Variant: name}
		}
	}
	if len(unmatched) > 0 {
		sort.Strings(unmatched)
		return Detection{Unknown: "no variant matches nodes " + strings.Join(unmatched, ", ")}
	}
	return Detection{Unknown: fmt.Sprintf("none of %d node(s) carries %s or a providerID yet", len(nodes), BackendLabel)}
}

func matchVariant(variants map[string]*Variant, n NodeInfo) string {
	names := make([]string, 0, len(variants))
	for name := range variants {
		names = append(names, name)
	}
	sort.Strings(names)
	if n.Backend != "" {
		for _, name := range names {
			if variants[name].Detect.Backend == n.Backend {
				return name
			}
		}
		return ""
	}
	scheme, _, ok := strings.Cut(n.ProviderID, "://")
	if !ok {
		return ""
	}
	for _, name := range names {
		for _, s := range variants[name].Detect.ProviderIDSchemes {
			if s == scheme {
				return name
			}
		}
	}
	return ""
}

// MixedMessage lists nodes per variant, for a Stalled condition.
func (d Detection) MixedMessage() string {
	names := make([]string, 0, len(d.Mixed))
	for name := range d.Mixed {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s: %s", name, strings.Join(d.Mixed[name], ", ")))
	}
	return strings.Join(parts, "; ")
}
