package bundle

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/cozystack/tenant-operator/bundles"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	"github.com/cozystack/tenant-operator/variants"
)

func TestSelectAddons(t *testing.T) {
	cat, err := LoadAddons(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	on, off := ptr.To(true), ptr.To(false)
	tests := []struct {
		name    string
		choices map[string]Choice
		want    []string // enabled, dependencies first
		implied []string
		refused string // reason
	}{
		{name: "defaults", want: []string{"prometheus-operator-crds", "metrics-server"}},
		{name: "enabling pulls in dependencies",
			choices: map[string]Choice{"cert-manager": {Enabled: on}},
			want:    []string{"prometheus-operator-crds", "metrics-server", "cert-manager-crds", "cert-manager"},
			implied: []string{"cert-manager-crds"}},
		{name: "a chain of dependencies",
			choices: map[string]Choice{"vertical-pod-autoscaler": {Enabled: on}},
			want: []string{"prometheus-operator-crds", "metrics-server", "victoria-metrics-operator",
				"vertical-pod-autoscaler-crds", "monitoring-agents", "vertical-pod-autoscaler"},
			implied: []string{"monitoring-agents", "vertical-pod-autoscaler-crds", "victoria-metrics-operator"}},
		{name: "a default switched off", choices: map[string]Choice{"metrics-server": {Enabled: off}},
			want: []string{"prometheus-operator-crds"}},
		{name: "values alone do not enable", choices: map[string]Choice{"velero": {}},
			want: []string{"prometheus-operator-crds", "metrics-server"}},
		{name: "disabled dependency of an enabled addon",
			choices: map[string]Choice{"cert-manager": {Enabled: on}, "cert-manager-crds": {Enabled: off}},
			refused: ReasonDependencyDisabled},
		{name: "disabled dependency of a default addon",
			choices: map[string]Choice{"prometheus-operator-crds": {Enabled: off}}, refused: ReasonDependencyDisabled},
		{name: "unknown addon", choices: map[string]Choice{"ingress": {Enabled: on}}, refused: ReasonUnknownAddon},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := cat.Select(tt.choices)
			if tt.refused != "" {
				r, ok := err.(*RefusedError)
				if !ok || r.Reason != tt.refused {
					t.Fatalf("want refusal %s, got %v", tt.refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range sel.Enabled {
				got = append(got, a.Name)
			}
			if !equal(got, tt.want) {
				t.Errorf("enabled = %v, want %v", got, tt.want)
			}
			if !equal(sel.Implied, tt.implied) {
				t.Errorf("implied = %v, want %v", sel.Implied, tt.implied)
			}
		})
	}
}

func TestAddonCatalogueRejectsCycles(t *testing.T) {
	a := &Addons{Addons: []Addon{
		{Name: "a", DependsOn: []string{"b"}, Components: []cozyv1.Component{{Name: "a"}}},
		{Name: "b", DependsOn: []string{"a"}, Components: []cozyv1.Component{{Name: "b"}}},
	}}
	if err := a.index(); err == nil {
		t.Fatal("a dependency cycle was accepted")
	}
}

func equal(a, b []string) bool { return slices.Equal(a, b) }

func TestTreePaths(t *testing.T) {
	vs, err := LoadVariants(variants.FS)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := TreePaths(bundles.FS, vs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"system/cilium", "system/coredns", "system/vsnap-crd", "system/kubevirt-csi-node", "system/metrics-server", "library/cozy-lib"} {
		if !slices.Contains(paths, want) {
			t.Errorf("%s missing from %v", want, paths)
		}
	}
	under := Under(paths)
	for name, want := range map[string]bool{"system/cilium": true, "system/cilium/values.yaml": true, "system/cilium-networkpolicy/x": false, "system": false, "apps/x": false} {
		if under(name) != want {
			t.Errorf("Under(%q) = %v", name, !want)
		}
	}
}
