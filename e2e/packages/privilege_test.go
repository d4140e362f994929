package packages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/privilege"
)

// The privilege classifier reads charts written by somebody else: every
// chart the operator names in Cozystack's real tree is rendered as Flux
// will (both paths, dependencies processed, the cluster's APIs) and
// classified without error, and what it says of well-known charts is what
// they do: CoreDNS, which only reads the cluster and binds its own role, is
// not privileged; Cilium shares the node's namespaces; the CRD charts
// install CRDs; metrics-server registers an aggregated API.
func TestClassifierReadsCozystacksCharts(t *testing.T) {
	tree := realTree(t)
	f := facts(t)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	caps.APIVersions = append(caps.APIVersions, servedCRDs...)
	want := map[string]func(g Gomega, r privilege.Result){
		"bundle tenant component coredns": func(g Gomega, r privilege.Result) {
			g.Expect(r.Findings).To(BeEmpty())
		},
		"bundle tenant component cilium": func(g Gomega, r privilege.Result) {
			g.Expect(r.Pods).To(BeTrue())
			g.Expect(strings.Join(r.Findings, "\n")).To(ContainSubstring("host namespaces (hostNetwork=true)"))
		},
		"addon prometheus-operator-crds": func(g Gomega, r privilege.Result) {
			g.Expect(r.Pods).To(BeFalse())
			g.Expect(strings.Join(r.Findings, "\n")).To(ContainSubstring("CustomResourceDefinition.apiextensions.k8s.io is not a kind known"))
		},
		"addon metrics-server": func(g Gomega, r privilege.Result) {
			g.Expect(strings.Join(r.Findings, "\n")).To(ContainSubstring("APIService.apiregistration.k8s.io is not a kind known"))
		},
	}
	seen := 0
	for _, n := range everyNamedChart(t) {
		t.Run(n.by, func(t *testing.T) {
			g := NewWithT(t)
			ch, err := helm.BuildFromTree(helm.TreeChart{Tree: tree, Path: n.chart.Path, Libraries: n.chart.Libraries, ValuesFiles: n.chart.ValuesFiles})
			g.Expect(err).NotTo(HaveOccurred())
			var vals map[string]any
			if n.comp != nil {
				vals = bundle.Values(*n.comp, f, nil)
			}
			out, err := helm.Render(ch, vals, n.release, n.ns, caps)
			g.Expect(err).NotTo(HaveOccurred())
			r, err := privilege.Classify(out, n.ns)
			g.Expect(err).NotTo(HaveOccurred(), "a chart Helm can render must be classified, not refused")
			if check, ok := want[n.by]; ok {
				seen++
				check(g, r)
			}
		})
	}
	if seen != len(want) {
		t.Errorf("checked %d of the %d well-known charts: a name changed", seen, len(want))
	}
}

// Every adversarial chart is rendered and classified the way the operator's
// gate does it (helm.Render against a tenant's APIs, privilege.Classify,
// helm.TemplatesCallingLookup) and yields the finding HostileCharts names;
// the unprivileged stand-ins yield none.
func TestClassifierHoldsHostileCharts(t *testing.T) {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	caps.APIVersions = append(caps.APIVersions, "helm.toolkit.fluxcd.io/v2", "helm.toolkit.fluxcd.io/v2/HelmRelease")
	entries, err := os.ReadDir(filepath.Join(TestdataDir(), "apps"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ch, err := helm.BuildFromTree(helm.TreeChart{Tree: os.DirFS(TestdataDir()), Path: "apps/" + name})
			g.Expect(err).NotTo(HaveOccurred())
			ns := "tenant-" + name
			out, err := helm.Render(ch, nil, name, ns, caps)
			g.Expect(err).NotTo(HaveOccurred())
			r, err := privilege.Classify(out, ns)
			g.Expect(err).NotTo(HaveOccurred())
			lookups, err := helm.TemplatesCallingLookup(ch)
			g.Expect(err).NotTo(HaveOccurred())
			for _, l := range lookups {
				r.Findings = append(r.Findings, "template "+l+" calls lookup")
			}
			want, hostile := HostileCharts[name]
			switch {
			case hostile:
				seen++
				g.Expect(strings.Join(r.Findings, "\n")).To(ContainSubstring(want))
			case name == "spawner" || name == "reader" || name == "echo" || name == "webapp" || name == "probe":
				g.Expect(r.Findings).To(BeEmpty())
			}
		})
	}
	if seen != len(HostileCharts) {
		t.Errorf("classified %d of the %d hostile charts: a chart is missing under apps/", seen, len(HostileCharts))
	}
}
