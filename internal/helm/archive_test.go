package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

func TestArchiveIsReproducibleAndLoadable(t *testing.T) {
	c, err := BuildFromTree(TreeChart{Tree: tree, Path: "system/metrics-server", Libraries: map[string]string{"cozy-lib": "library/cozy-lib"}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("two archives of the same chart differ")
	}
	ch, err := loader.LoadArchive(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "cozy-metrics-server" || len(ch.Dependencies()) != 2 {
		t.Fatalf("archive holds %s with %d dependencies", ch.Name(), len(ch.Dependencies()))
	}
}

func TestValidateValues(t *testing.T) {
	c, err := BuildFromTree(TreeChart{Tree: tree, Path: "system/velero"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		values map[string]any
		reject bool
	}{
		{"defaults", nil, false},
		{"a value of the right type", map[string]any{"velero": map[string]any{"terminationGracePeriodSeconds": 30}}, false},
		{"a value of the wrong type", map[string]any{"velero": map[string]any{"terminationGracePeriodSeconds": "forever"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateValues(c, tt.values)
			if got := errors.Is(err, ErrValuesRejected); got != tt.reject {
				t.Fatalf("rejected = %v (%v), want %v", got, err, tt.reject)
			}
		})
	}
}

// Helm stamps the current time into every entry; normalize must erase it.
func TestNormalizeErasesTimes(t *testing.T) {
	tgz := func(mtime time.Time) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.ModTime = mtime
		tw := tar.NewWriter(zw)
		body := []byte("name: x\n")
		if err := tw.WriteHeader(&tar.Header{Name: "x/Chart.yaml", Mode: 0o644, Size: int64(len(body)), ModTime: mtime}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, err := normalize(bytes.NewReader(tgz(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		t.Fatal(err)
	}
	b, err := normalize(bytes.NewReader(tgz(time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC))))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("archives that differ only in timestamps normalize differently")
	}
}

// The archive is what Flux installs: it must carry the merged values files,
// not only the chart's own values.yaml.
func TestArchiveCarriesMergedValuesFiles(t *testing.T) {
	c, err := BuildFromTree(TreeChart{Tree: tree, Path: "system/cilium", ValuesFiles: []string{"values.yaml", "values-talos.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	cilium := ch.Values["cilium"].(map[string]any)
	if cilium["k8sServiceHost"] != "localhost" {
		t.Fatalf("archived cilium values = %v", cilium)
	}
}

// Render gives what Helm applies on both paths: the templates and the
// crds/ files; a template that calls lookup, in a subchart or a partial, is
// named.
func TestRenderAndLookup(t *testing.T) {
	fsys := fstest.MapFS{
		"app/Chart.yaml":                      {Data: []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n")},
		"app/crds/crd.yaml":                   {Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: xs.example.com}\n")},
		"app/templates/cm.yaml":               {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\n")},
		"app/charts/sub/Chart.yaml":           {Data: []byte("apiVersion: v2\nname: sub\nversion: 0.1.0\n")},
		"app/charts/sub/templates/_probe.tpl": {Data: []byte("{{- define \"sub.probe\" -}}{{ (lookup \"v1\" \"Secret\" \"kube-system\" \"x\").data }}{{- end -}}\n")},
		"app/charts/sub/templates/plain.yaml": {Data: []byte("# lookup is only a word here\n")},
		"app/charts/sub/crds/nested.yaml":     {Data: []byte("kind: CustomResourceDefinition\n")},
	}
	c, err := BuildFromTree(TreeChart{Tree: fsys, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(c, nil, "r", "ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"install/app/templates/cm.yaml", "install/app/crds/crd.yaml", "install/app/charts/sub/crds/nested.yaml",
		"upgrade/app/templates/cm.yaml"} {
		if _, ok := out[name]; !ok {
			t.Errorf("Render left out %s: %v", name, slices.Collect(maps.Keys(out)))
		}
	}
	lookups, err := TemplatesCallingLookup(c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lookups, []string{"app/charts/sub/templates/_probe.tpl"}) {
		t.Errorf("templates calling lookup: %v", lookups)
	}
}

// Helm renders with dependencies processed (a condition drops a subchart,
// import-values lift its values), the cluster's APIs and the install or
// upgrade path; a chart can hide an object behind any of them.
func TestRenderAsHelmControllerWill(t *testing.T) {
	fsys := fstest.MapFS{
		"app/Chart.yaml": {Data: []byte(`apiVersion: v2
name: app
version: 0.1.0
dependencies:
- {name: extra, version: 0.1.0, condition: extra.enabled}
- {name: lib, version: 0.1.0, import-values: [{child: exported, parent: imported}]}
`)},
		"app/values.yaml":                   {Data: []byte("extra: {enabled: false}\n")},
		"app/templates/paths.yaml":          {Data: []byte("{{ if .Release.IsUpgrade }}kind: OnUpgrade{{ else }}kind: OnInstall{{ end }}\n")},
		"app/templates/apis.yaml":           {Data: []byte("{{ if .Capabilities.APIVersions.Has \"cilium.io/v2\" }}kind: WithCilium{{ end }}\n")},
		"app/templates/imported.yaml":       {Data: []byte("kind: {{ .Values.imported.kind | default \"NotImported\" }}\n")},
		"app/charts/extra/Chart.yaml":       {Data: []byte("apiVersion: v2\nname: extra\nversion: 0.1.0\n")},
		"app/charts/extra/templates/x.yaml": {Data: []byte("kind: FromDisabledSubchart\n")},
		"app/charts/lib/Chart.yaml":         {Data: []byte("apiVersion: v2\nname: lib\nversion: 0.1.0\n")},
		"app/charts/lib/values.yaml":        {Data: []byte("exported: {kind: Imported}\n")},
	}
	c, err := BuildFromTree(TreeChart{Tree: fsys, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, "cilium.io/v2")
	out, err := Render(c, map[string]any{}, "r", "ns", caps)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(slices.Collect(maps.Values(out)), "\n")
	for _, want := range []string{"kind: OnInstall", "kind: OnUpgrade", "kind: WithCilium", "kind: Imported"} {
		if !strings.Contains(all, want) {
			t.Errorf("rendering lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "FromDisabledSubchart") || strings.Contains(all, "NotImported") {
		t.Errorf("rendered what Helm would not:\n%s", all)
	}
}
