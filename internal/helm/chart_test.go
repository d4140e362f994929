package helm

import (
	"errors"
	"testing"
	"testing/fstest"
)

// tree has the layout of Cozystack's packages tree, as small as the chart
// builder's logic needs: system/cilium an umbrella chart with the upstream
// chart vendored under charts/ and a values overlay beside values.yaml (as
// Cozystack's system/cilium has values-talos.yaml); system/metrics-server a
// chart listing the cozy-lib library without vendoring it, which the
// builder vendors from library/cozy-lib when a PackageSource names it;
// system/velero an umbrella chart whose vendored chart carries a values
// schema, as Cozystack's does.
// Charts rendered for real are tested against Cozystack's own tree
// (e2e/packages).
var tree = fstest.MapFS{
	"system/cilium/Chart.yaml":                               {Data: []byte("apiVersion: v2\nname: cozy-cilium\nversion: 0.0.0\n")},
	"system/cilium/values.yaml":                              {Data: []byte("cilium:\n  kubeProxyReplacement: true\n  k8sServiceHost: \"\"\n")},
	"system/cilium/values-talos.yaml":                        {Data: []byte("cilium:\n  k8sServiceHost: localhost\n")},
	"system/cilium/charts/cilium/Chart.yaml":                 {Data: []byte("apiVersion: v2\nname: cilium\nversion: 1.19.5\n")},
	"system/cilium/charts/cilium/templates/cm.yaml":          {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cilium-config\n")},
	"system/metrics-server/Chart.yaml":                       {Data: []byte("apiVersion: v2\nname: cozy-metrics-server\nversion: 0.0.0\ndependencies:\n- name: cozy-lib\n  version: 0.1.0\n")},
	"system/metrics-server/templates/x.yaml":                 {Data: []byte("{{ include \"cozy-lib.x\" . }}\n")},
	"system/metrics-server/charts/metrics-server/Chart.yaml": {Data: []byte("apiVersion: v2\nname: metrics-server\nversion: 3.12.2\n")},
	"system/velero/Chart.yaml":                               {Data: []byte("apiVersion: v2\nname: cozy-velero\nversion: 0.0.0\n")},
	"system/velero/charts/velero/Chart.yaml":                 {Data: []byte("apiVersion: v2\nname: velero\nversion: 11.0.0\n")},
	"system/velero/charts/velero/values.schema.json":         {Data: []byte(`{"type":"object","properties":{"terminationGracePeriodSeconds":{"type":"number"}}}`)},
	"library/cozy-lib/Chart.yaml":                            {Data: []byte("apiVersion: v2\nname: cozy-lib\ntype: library\nversion: 0.1.0\n")},
	"library/cozy-lib/templates/_x.tpl":                      {Data: []byte("{{- define \"cozy-lib.x\" -}}{{- end -}}\n")},
}

func TestBuildFromTree(t *testing.T) {
	tests := []struct {
		name    string
		tc      TreeChart
		wantErr error
		check   func(t *testing.T, c *Chart)
	}{
		{"umbrella chart with its vendored subchart", TreeChart{Path: "system/cilium"}, nil, func(t *testing.T, c *Chart) {
			ch, err := c.Load()
			if err != nil {
				t.Fatal(err)
			}
			if len(ch.Dependencies()) != 1 || ch.Dependencies()[0].Name() != "cilium" {
				t.Fatalf("dependencies = %v", ch.Dependencies())
			}
		}},
		{"values files merged in order, later ones win", TreeChart{Path: "system/cilium", ValuesFiles: []string{"values.yaml", "values-talos.yaml"}}, nil, func(t *testing.T, c *Chart) {
			ch, err := c.Load()
			if err != nil {
				t.Fatal(err)
			}
			cilium := ch.Values["cilium"].(map[string]any)
			if cilium["k8sServiceHost"] != "localhost" || cilium["kubeProxyReplacement"] != true {
				t.Fatalf("cilium values = %v", cilium)
			}
		}},
		{"library vendored into charts/", TreeChart{Path: "system/metrics-server", Libraries: map[string]string{"cozy-lib": "library/cozy-lib"}}, nil, func(t *testing.T, c *Chart) {
			ch, err := c.Load()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range ch.Dependencies() {
				found = found || d.Name() == "cozy-lib"
			}
			if !found {
				t.Fatal("cozy-lib not vendored")
			}
		}},
		{"a dependency neither vendored nor supplied", TreeChart{Path: "system/metrics-server"}, ErrChartInvalid, nil},
		{"a missing values file", TreeChart{Path: "system/cilium", ValuesFiles: []string{"values-nope.yaml"}}, ErrChartInvalid, nil},
		{"a missing chart", TreeChart{Path: "system/nope"}, ErrChartInvalid, nil},
		{"a path escaping the tree stays inside it", TreeChart{Path: "../../../../etc"}, ErrChartInvalid, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tc.Tree = tree
			c, err := BuildFromTree(tt.tc)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestDigestFollowsContent(t *testing.T) {
	a, err := BuildFromTree(TreeChart{Tree: tree, Path: "system/cilium"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildFromTree(TreeChart{Tree: tree, Path: "system/cilium"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := BuildFromTree(TreeChart{Tree: tree, Path: "system/cilium", ValuesFiles: []string{"values.yaml", "values-talos.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest != b.Digest || a.Digest == c.Digest {
		t.Fatalf("digests: same input %s/%s, other values files %s", a.Digest, b.Digest, c.Digest)
	}
}

// A chart at the root of its tree (a PackageSource whose path is the chart
// itself) loads with its dotfiles intact: .helmignore still applies.
func TestBuildFromTreeRoot(t *testing.T) {
	root := fstest.MapFS{
		"Chart.yaml":        {Data: []byte("apiVersion: v2\nname: root\nversion: 0.1.0\n")},
		".helmignore":       {Data: []byte("secret.txt\n")},
		"secret.txt":        {Data: []byte("x")},
		"templates/cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")},
	}
	c, err := BuildFromTree(TreeChart{Tree: root, Path: "."})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.Load()
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "root" || len(ch.Templates) != 1 {
		t.Fatalf("chart %s with %d templates, want root with 1", ch.Name(), len(ch.Templates))
	}
	for _, f := range ch.Files {
		switch f.Name {
		case "secret.txt":
			t.Fatal(".helmignore was not applied: secret.txt is in the chart")
		case "helmignore":
			t.Fatal("a dotfile lost its dot")
		}
	}
}
