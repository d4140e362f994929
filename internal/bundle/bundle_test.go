package bundle

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cozystack/tenant-operator/bundles"
)

func TestEmbeddedBundlesLoad(t *testing.T) {
	d, err := Load(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	if d.Component("cilium") == nil || d.Component("coredns") == nil {
		t.Fatalf("tenant bundle lacks its network tier: %+v", d.Components)
	}
}

func component(name string, deps ...string) Component {
	return Component{Name: name, Tier: TierNetwork, DependsOn: deps,
		Chart: ChartRef{Path: "system/" + name}, Release: ReleaseRef{Name: name, Namespace: "ns"}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		comps   []Component
		wantErr string
	}{
		{"valid", []Component{component("a"), component("b", "a")}, ""},
		{"unknown dependency", []Component{component("a", "x")}, `depends on unknown component "x"`},
		{"cycle", []Component{component("a", "b"), component("b", "a")}, "dependency cycle"},
		{"duplicate", []Component{component("a"), component("a")}, "defined twice"},
		{"bad tier", []Component{func() Component { c := component("a"); c.Tier = "x"; return c }()}, "unknown tier"},
		{"two chart sources", []Component{func() Component { c := component("a"); c.Chart.Repo = "oci://r"; return c }()}, "exactly one of path or repo"},
		{"unknown fact", []Component{func() Component { c := component("a"); c.Facts = map[string]string{"x.y": "nope"}; return c }()}, `unknown fact "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Definition{Name: "t", Components: tt.comps}).Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	kubeProxy := component("kube-proxy", "cilium")
	kubeProxy.Unless = "kubeProxyReplacement"
	def := &Definition{Name: "t", Components: []Component{component("coredns", "cilium", "kube-proxy"), kubeProxy, component("cilium")}}
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		facts    Facts
		want     []string
		wantDeps map[string][]string
	}{
		{"kube-proxy replaced", Facts{"kubeProxyReplacement": true}, []string{"cilium", "coredns"},
			map[string][]string{"coredns": {"cilium"}}},
		{"kube-proxy needed", Facts{"kubeProxyReplacement": false}, []string{"cilium", "kube-proxy", "coredns"},
			map[string][]string{"coredns": {"cilium", "kube-proxy"}, "kube-proxy": {"cilium"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := def.Plan(tt.facts)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range plan {
				names = append(names, c.Name)
				if want, ok := tt.wantDeps[c.Name]; ok && !reflect.DeepEqual(c.DependsOn, want) {
					t.Errorf("%s depends on %v, want %v", c.Name, c.DependsOn, want)
				}
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Fatalf("plan = %v, want %v", names, tt.want)
			}
		})
	}
}

func TestNewFacts(t *testing.T) {
	base := ClusterInput{APIEndpoint: "api.example:6443", PodCIDR: "10.243.0.0/16", ServiceCIDR: "10.95.0.0/16"}
	tests := []struct {
		name      string
		mutate    func(*ClusterInput)
		wantField string
		check     func(Facts) bool
	}{
		{"derives the DNS IP", func(*ClusterInput) {}, "", func(f Facts) bool {
			return f["dnsServiceIP"] == "10.95.0.10" && f["apiHost"] == "api.example" && f["apiPort"] == int64(6443)
		}},
		{"keeps a given DNS IP", func(in *ClusterInput) { in.DNSServiceIP = "10.95.0.53" }, "", func(f Facts) bool { return f["dnsServiceIP"] == "10.95.0.53" }},
		{"missing endpoint", func(in *ClusterInput) { in.APIEndpoint = "" }, "spec.cluster.apiEndpoint", nil},
		{"endpoint without port", func(in *ClusterInput) { in.APIEndpoint = "api" }, "spec.cluster.apiEndpoint", nil},
		{"bad service CIDR", func(in *ClusterInput) { in.ServiceCIDR = "x" }, "spec.cluster.serviceCIDR", nil},
		{"DNS IP outside the service CIDR", func(in *ClusterInput) { in.DNSServiceIP = "192.0.2.1" }, "spec.cluster.dnsServiceIP", nil},
		{"service CIDR too small", func(in *ClusterInput) { in.ServiceCIDR = "10.95.0.0/30" }, "spec.cluster.serviceCIDR", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			tt.mutate(&in)
			f, err := NewFacts(in, map[string]any{"kubeProxyReplacement": true, "notAFact": 1})
			if tt.wantField != "" {
				fe, ok := err.(*FieldError)
				if !ok || fe.Field != tt.wantField {
					t.Fatalf("err = %v, want a FieldError on %s", err, tt.wantField)
				}
				return
			}
			if err != nil || !tt.check(f) || !f.Bool("kubeProxyReplacement") || f["notAFact"] != nil {
				t.Fatalf("facts = %v, err = %v", f, err)
			}
		})
	}
}

func TestValuesLayering(t *testing.T) {
	c := component("cilium")
	c.Values = map[string]any{"cilium": map[string]any{"MTU": 1350, "routingMode": "tunnel"}}
	c.Facts = map[string]string{"cilium.k8sServiceHost": "apiHost"}
	got := Values(c, Facts{"apiHost": "api"}, map[string]any{"cilium": map[string]any{"MTU": 1400}})
	want := map[string]any{"cilium": map[string]any{"MTU": 1400, "routingMode": "tunnel", "k8sServiceHost": "api"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Values() = %v, want %v", got, want)
	}
}

func TestNullOmittedDefaults(t *testing.T) {
	sc := func(infra string, def bool) map[string]any {
		return map[string]any{"infraStorageClass": infra, "default": def}
	}
	chartDefaults := map[string]any{"storageClasses": map[string]any{"replicated": sc("replicated", true), "kubevirt": sc("replicated", false)}}
	tests := []struct {
		name     string
		fact     any
		override map[string]any
		want     map[string]any
	}{
		{"the fact's map replaces the chart's", map[string]any{"fast": sc("nvme", true)}, nil,
			map[string]any{"fast": sc("nvme", true), "replicated": nil, "kubevirt": nil}},
		{"a key both name is kept", map[string]any{"replicated": sc("lvm", true)}, nil,
			map[string]any{"replicated": sc("lvm", true), "kubevirt": nil}},
		{"an override's key is kept", map[string]any{"fast": sc("nvme", true)},
			map[string]any{"storageClasses": map[string]any{"kubevirt": sc("nvme", false)}},
			map[string]any{"fast": sc("nvme", true), "kubevirt": sc("nvme", false), "replicated": nil}},
		{"no fact leaves the chart's defaults", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := component("csi")
			c.Facts = map[string]string{"storageClasses": "storageClasses"}
			facts := Facts{}
			if tt.fact != nil {
				facts["storageClasses"] = tt.fact
			}
			before := fmt.Sprint(tt.fact)
			vals := Values(c, facts, tt.override)
			NullOmittedDefaults(c, facts, chartDefaults, vals)
			got, _ := vals["storageClasses"].(map[string]any)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("storageClasses = %v, want %v", got, tt.want)
			}
			if fmt.Sprint(tt.fact) != before {
				t.Fatalf("the fact's own map was changed: %v", tt.fact)
			}
		})
	}
}

func TestLoadRejectsUnknownFields(t *testing.T) {
	fsys := fstest.MapFS{"x/bundle.yaml": {Data: []byte("name: x\ncomponents: []\nsurprise: 1\n")}}
	if _, err := Load(fsys, "x"); err == nil {
		t.Fatal("a bundle with an unknown field must not load")
	}
}

// The Gateway API, when on, puts its CRDs before Cilium and turns Cilium's
// gateway support and Envoy on; when off, neither appears.
func TestGatewayAPIInTheTenantBundle(t *testing.T) {
	def, err := Load(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		facts, err := NewFacts(ClusterInput{APIEndpoint: "10.0.0.1:6443", PodCIDR: "10.243.0.0/16", ServiceCIDR: "10.95.0.0/16", GatewayAPI: on}, def.Settings)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := def.Plan(facts)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var cilium Component
		for _, c := range plan {
			names = append(names, c.Name)
			if c.Name == "cilium" {
				cilium = c
			}
		}
		vals := Values(cilium, facts, nil)["cilium"].(map[string]any)
		_, gateway := vals["gatewayAPI"]
		_, envoy := vals["envoy"]
		if on {
			if names[0] != "gateway-api-crds" || !slices.Equal(cilium.DependsOn, []string{"gateway-api-crds"}) || !gateway || !envoy {
				t.Fatalf("on: plan %v, cilium after %v, gateway values %v/%v", names, cilium.DependsOn, gateway, envoy)
			}
			continue
		}
		if slices.Contains(names, "gateway-api-crds") || len(cilium.DependsOn) != 0 || gateway || envoy {
			t.Fatalf("off: plan %v, cilium after %v, gateway values %v/%v", names, cilium.DependsOn, gateway, envoy)
		}
	}
}
