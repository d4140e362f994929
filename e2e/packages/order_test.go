package packages

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/variants"
)

// cozystackRelease is one HelmRelease apps/kubernetes renders for a tenant.
type cozystackRelease struct {
	name, release string
	dependsOn     []string // HelmRelease names
}

// cozystackReleases renders the HelmReleases of the snapshot's
// apps/kubernetes (templates/helmreleases and the chart's helpers) with its
// real values.yaml, the platform's _namespace and _cluster, and overrides.
func cozystackReleases(t *testing.T, overrides map[string]any) (map[string]cozystackRelease, error) {
	t.Helper()
	dir, err := CozystackDir()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadDir(filepath.Join(dir, "apps", "kubernetes"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []*chart.File
	for _, f := range ch.Templates {
		if strings.HasPrefix(f.Name, "templates/helmreleases/") || strings.HasPrefix(filepath.Base(f.Name), "_") {
			kept = append(kept, f)
		}
	}
	ch.Templates = kept
	platform := map[string]any{
		"_namespace": map[string]any{"etcd": "tenant-root", "monitoring": "tenant-root", "host": "example.org"},
		"_cluster":   map[string]any{"cluster-domain": "cozy.local", "root-host": "example.org"},
	}
	rel, err := renderAsKubernetesApp(ch, chartutil.CoalesceTables(overrides, platform))
	if err != nil {
		return nil, err
	}
	out := map[string]cozystackRelease{}
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var hr struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				ReleaseName string `json:"releaseName"`
				DependsOn   []struct {
					Name string `json:"name"`
				} `json:"dependsOn"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &hr); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if hr.Kind != "HelmRelease" {
			continue
		}
		r := cozystackRelease{name: hr.Metadata.Name, release: hr.Spec.ReleaseName}
		for _, d := range hr.Spec.DependsOn {
			r.dependsOn = append(r.dependsOn, d.Name)
		}
		out[r.name] = r
	}
	if len(out) == 0 {
		t.Fatal("apps/kubernetes rendered no HelmRelease")
	}
	return out, nil
}

// Cozystack's management side orders a tenant's HelmReleases with dependsOn,
// some of them only under a switch (victoria-metrics-operator waits for
// cert-manager's CRDs while cert-manager is on). Rendered from the snapshot
// with every addon on, then with each one off in turn, every HelmRelease the
// bundle installs must wait for at least what Cozystack's waits for: an
// addon for the same addons, under the same switches, and for the network
// tier where Cozystack waits for Cilium or CoreDNS; a bootstrap component
// for the same components.
func TestOrderMatchesCozystack(t *testing.T) {
	catalogue, err := bundle.LoadAddons(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	def, err := bundle.Load(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	addonOf := map[string]*bundle.Addon{} // by Helm release name
	for _, a := range catalogue.Addons {
		for _, c := range a.Components {
			if c.Install != nil && c.Install.ReleaseName != "" {
				addonOf[c.Install.ReleaseName] = catalogue.Get(a.Name)
			}
		}
	}
	components := map[string]bundle.Component{} // by Helm release name
	for _, c := range def.Components {
		components[c.Release.Name] = c
	}
	// apps/kubernetes is the KubeVirt tenant.
	vs, err := bundle.LoadVariants(variants.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range vs["kubevirt"].Components {
		components[c.Release.Name] = c
	}
	// Not tenant addons here: ingress is a catalog app, Flux is the
	// operator's own tier, ouroboros serves ingress (manifests/cozystack).
	skipped := map[string]bool{"ingress-nginx": true, "fluxcd": true, "fluxcd-operator": true, "ouroboros": true}

	vals := kubernetesValues(t)
	var keys []string
	for k := range vals["addons"].(map[string]any) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	scenario := func(off ...string) map[string]any {
		addons := map[string]any{}
		for _, k := range keys {
			addons[k] = map[string]any{"enabled": !slices.Contains(off, k)}
		}
		return map[string]any{"addons": addons}
	}
	scenarios := map[string]string{"every addon on": ""}
	for _, k := range keys {
		scenarios[k+" off"] = k
	}
	for name, off := range scenarios {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			rendered, err := cozystackReleases(t, scenario(off))
			if err != nil && off != "" {
				// apps/kubernetes refuses to switch off what another enabled
				// addon requires (gpuOperator under hami): switch that one
				// off too, the first whose absence makes the render pass.
				refusal := err
				for _, also := range keys {
					if also == off {
						continue
					}
					if rendered, err = cozystackReleases(t, scenario(off, also)); err == nil {
						t.Logf("Cozystack refuses %s off alone (%v); %s is off too", off, refusal, also)
						break
					}
				}
			}
			g.Expect(err).NotTo(HaveOccurred(), "rendering apps/kubernetes' HelmReleases")
			on := map[string]bool{}
			for _, r := range rendered {
				if a := addonOf[r.release]; a != nil {
					on[a.Name] = true
				}
			}
			enabled := func(n string) bool { return on[n] }
			for _, r := range rendered {
				if skipped[r.release] {
					continue
				}
				a, isAddon := addonOf[r.release]
				comp, isComponent := components[r.release]
				g.Expect(isAddon || isComponent).To(BeTrue(), "Cozystack installs release %s, which the bundle does not know", r.release)
				var wantAddons, wantComponents []string
				network := false
				for _, d := range r.dependsOn {
					dep, ok := rendered[d]
					g.Expect(ok).To(BeTrue(), "%s depends on %s, which was not rendered", r.name, d)
					switch da, dc := addonOf[dep.release], components[dep.release]; {
					case da != nil:
						wantAddons = append(wantAddons, da.Name)
					case dc.Name != "":
						wantComponents = append(wantComponents, dc.Name)
						network = network || dc.Tier == bundle.TierNetwork
					default:
						t.Errorf("%s depends on release %s, which the bundle does not know", r.release, dep.release)
					}
				}
				if isAddon {
					g.Expect(a.Needs(enabled)).To(ContainElements(wantAddons), "addon %s", a.Name)
					if network {
						g.Expect(a.AfterNetwork).To(BeTrue(), "addon %s: Cozystack waits for %v", a.Name, wantComponents)
					}
					continue
				}
				g.Expect(comp.DependsOn).To(ContainElements(wantComponents), "component %s", comp.Name)
			}
		})
	}
}
