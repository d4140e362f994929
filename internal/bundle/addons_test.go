package bundle

import (
	"reflect"
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

// An `after` addon orders its addon only while it is enabled, never
// enables it, and closes cycles like a dependency does.
func TestAddonsAfter(t *testing.T) {
	comp := func(n string) []cozyv1.Component { return []cozyv1.Component{{Name: n}} }
	a := &Addons{Addons: []Addon{
		{Name: "operator", After: []string{"crds"}, Components: comp("operator")},
		{Name: "crds", Components: comp("crds")},
		{Name: "app", Default: true, DependsOn: []string{"operator"}, Components: comp("app")},
	}}
	if err := a.index(); err != nil {
		t.Fatal(err)
	}
	on := ptr.To(true)
	tests := []struct {
		name    string
		choices map[string]Choice
		want    []string
		needs   []string // of operator
	}{
		{name: "the addon it comes after is off: not enabled, not waited for",
			want: []string{"operator", "app"}, needs: nil},
		{name: "the addon it comes after is on: ordered first and waited for",
			choices: map[string]Choice{"crds": {Enabled: on}},
			want:    []string{"crds", "operator", "app"}, needs: []string{"crds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := a.Select(tt.choices)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ad := range sel.Enabled {
				got = append(got, ad.Name)
			}
			if !equal(got, tt.want) {
				t.Errorf("enabled = %v, want %v", got, tt.want)
			}
			if needs := a.Get("operator").Needs(sel.IsEnabled); !equal(needs, tt.needs) {
				t.Errorf("operator needs %v, want %v", needs, tt.needs)
			}
			if deps := a.Dependents("crds", map[string]bool{"operator": true, "crds": sel.IsEnabled("crds")}); sel.IsEnabled("crds") != slices.Contains(deps, "operator") {
				t.Errorf("dependents of crds = %v", deps)
			}
		})
	}
	cyclic := &Addons{Addons: []Addon{
		{Name: "a", After: []string{"b"}, Components: comp("a")},
		{Name: "b", DependsOn: []string{"a"}, Components: comp("b")},
	}}
	if err := cyclic.index(); err == nil {
		t.Error("a cycle through after was accepted")
	}
	unknown := &Addons{Addons: []Addon{{Name: "a", After: []string{"nope"}, Components: comp("a")}}}
	if err := unknown.index(); err == nil {
		t.Error("after naming an unknown addon was accepted")
	}
}

// The catalogue's wait strategy reaches components that name none, and
// not those with health check expressions.
func TestAddonsWaitStrategy(t *testing.T) {
	a := &Addons{WaitStrategy: "legacy", Addons: []Addon{{Name: "a", Components: []cozyv1.Component{
		{Name: "plain", Install: &cozyv1.ComponentInstall{}},
		{Name: "own", Install: &cozyv1.ComponentInstall{WaitStrategy: "poller"}},
		{Name: "cel", Install: &cozyv1.ComponentInstall{HealthCheckExprs: []cozyv1.CustomHealthCheck{{APIVersion: "v1", Kind: "X", Current: "true"}}}},
		{Name: "published"},
	}}}}
	if err := a.index(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range a.Get("a").Components {
		if c.Install != nil {
			got[c.Name] = c.Install.WaitStrategy
		}
	}
	want := map[string]string{"plain": "legacy", "own": "poller", "cel": ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("wait strategies %v, want %v", got, want)
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

func TestPlatformNamespaces(t *testing.T) {
	vs, err := LoadVariants(variants.FS)
	if err != nil {
		t.Fatal(err)
	}
	got, err := PlatformNamespaces(bundles.FS, vs)
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{
		"kube-system": true, "default": true, // Kubernetes' own
		"cozy-cilium": true, "cozy-vsnap-crd": true, // the bootstrap tier
		"cozy-csi":        true,                      // a variant's
		"cozy-monitoring": true, "cozy-velero": true, // addons', enabled or not
		"cozy-ingress": false, "tenant-echo": false,
	} {
		if slices.Contains(got, ns) != want {
			t.Errorf("%s in PlatformNamespaces: %v, want %v (%v)", ns, !want, want, got)
		}
	}
}

func TestBootstrapReleases(t *testing.T) {
	vs, err := LoadVariants(variants.FS)
	if err != nil {
		t.Fatal(err)
	}
	got, err := BootstrapReleases(bundles.FS, vs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kube-system/coredns", "cozy-cilium/cilium", "cozy-csi/csi"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s missing from %v", want, got)
		}
	}
}
