package bundle

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/variants"
)

func TestEmbeddedVariantsLoad(t *testing.T) {
	vs, err := LoadVariants(variants.FS)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Load(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kubevirt", "openstack", "none"} {
		if vs[name] == nil {
			t.Fatalf("variant %s missing", name)
		}
		if _, err := def.With(vs[name]); err != nil {
			t.Fatalf("bundle with %s: %v", name, err)
		}
	}
}

func TestLoadVariantsRefusesRedefinitionAndMisnamedFolders(t *testing.T) {
	a := fstest.MapFS{"x/variant.yaml": {Data: []byte("name: x\n")}}
	if _, err := LoadVariants(a, a); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Fatalf("err = %v", err)
	}
	b := fstest.MapFS{"x/variant.yaml": {Data: []byte("name: y\n")}}
	if _, err := LoadVariants(b); err == nil || !strings.Contains(err.Error(), "must match its folder") {
		t.Fatalf("err = %v", err)
	}
}

func TestDetectVariant(t *testing.T) {
	vs := map[string]*Variant{
		"kubevirt":  {Name: "kubevirt", Detect: Detect{Backend: "kubevirt", ProviderIDSchemes: []string{"kubevirt"}}},
		"openstack": {Name: "openstack", Detect: Detect{Backend: "openstack", ProviderIDSchemes: []string{"openstack"}}},
	}
	tests := []struct {
		name        string
		nodes       []NodeInfo
		want        string
		wantUnknown string
		wantMixed   map[string][]string
	}{
		{"no nodes", nil, "", "no nodes have joined yet", nil},
		{"no signal yet", []NodeInfo{{Name: "a"}}, "", "carries " + BackendLabel, nil},
		{"label", []NodeInfo{{Name: "a", Backend: "kubevirt"}, {Name: "b"}}, "kubevirt", "", nil},
		{"providerID scheme", []NodeInfo{{Name: "a", ProviderID: "openstack:///uuid"}}, "openstack", "", nil},
		{"label wins over providerID", []NodeInfo{{Name: "a", Backend: "openstack", ProviderID: "kubevirt://a"}}, "openstack", "", nil},
		{"unknown backend", []NodeInfo{{Name: "a", Backend: "vsphere"}}, "", "no variant matches nodes a", nil},
		{"mixed", []NodeInfo{{Name: "b", Backend: "kubevirt"}, {Name: "a", Backend: "kubevirt"}, {Name: "c", ProviderID: "openstack:///x"}}, "", "",
			map[string][]string{"kubevirt": {"a", "b"}, "openstack": {"c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DetectVariant(vs, tt.nodes)
			if d.Variant != tt.want || !strings.Contains(d.Unknown, tt.wantUnknown) || !reflect.DeepEqual(d.Mixed, tt.wantMixed) {
				t.Fatalf("DetectVariant() = %+v", d)
			}
			if tt.wantMixed != nil && d.MixedMessage() != "kubevirt: a, b; openstack: c" {
				t.Fatalf("MixedMessage() = %q", d.MixedMessage())
			}
		})
	}
}

func TestExpand(t *testing.T) {
	f := Facts{"kubeMinor": "37"}
	if got := f.Expand("2.${kubeMinor}.x"); got != "2.37.x" {
		t.Fatalf("Expand = %q", got)
	}
	if got := f.Expand("${nope}"); got != "${nope}" {
		t.Fatalf("unknown facts must stay visible, got %q", got)
	}
}
