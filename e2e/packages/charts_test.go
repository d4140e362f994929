package packages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"sigs.k8s.io/yaml"
)

// obj is one rendered manifest, decoded.
type obj map[string]any

func (o obj) get(path ...string) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func (o obj) str(path ...string) string {
	s, _ := o.get(path...).(string)
	return s
}

func (o obj) podSpec() obj {
	m, _ := o.get("spec", "template", "spec").(map[string]any)
	return obj(m)
}

func (o obj) container(i int) obj {
	cs, _ := o.podSpec()["containers"].([]any)
	if i >= len(cs) {
		return nil
	}
	m, _ := cs[i].(map[string]any)
	return obj(m)
}

func (o obj) env() map[string]string {
	out := map[string]string{}
	list, _ := o["env"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			out[m["name"].(string)] = v
		}
	}
	return out
}

type rendered map[string]obj // "Kind/name" -> object

func (r rendered) must(t *testing.T, kindName string) obj {
	t.Helper()
	o, ok := r[kindName]
	if !ok {
		keys := make([]string, 0, len(r))
		for k := range r {
			keys = append(keys, k)
		}
		t.Fatalf("%s not rendered; got %v", kindName, keys)
	}
	return o
}

type renderOpts struct {
	release, namespace string
	values             map[string]any
	valuesFiles        []string // relative to the chart, layered in order
	apiVersions        []string
}

// render does what `helm template` does: client-only install, dry run.
func render(chartDir string, o renderOpts) (rendered, error) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return nil, err
	}
	if reqs := ch.Metadata.Dependencies; reqs != nil {
		if err := action.CheckDependencies(ch, reqs); err != nil {
			return nil, err
		}
	}
	vals := map[string]any{}
	for _, f := range o.valuesFiles {
		v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, f))
		if err != nil {
			return nil, err
		}
		vals = chartutil.CoalesceTables(v, vals)
	}
	if o.values != nil {
		vals = chartutil.CoalesceTables(o.values, vals)
	}

	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = o.release
	inst.Namespace = o.namespace
	inst.APIVersions = o.apiVersions
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return nil, err
	}

	out := rendered{}
	for _, m := range releaseutil.SplitManifests(rel.Manifest) {
		var o obj
		if err := yaml.Unmarshal([]byte(m), &o); err != nil {
			return nil, err
		}
		if o == nil {
			continue
		}
		out[o.str("kind")+"/"+o.str("metadata", "name")] = o
	}
	return out, nil
}

// The stand-in catalog apps must render with their defaults and pass `helm
// lint` without warnings.
func TestChartsRenderAndLint(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(TestdataDir(), "apps"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no charts under apps/")
	}
	for _, e := range entries {
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(TestdataDir(), "apps", name)
			objs, err := render(dir, renderOpts{release: name, namespace: "tenant-" + name})
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if len(objs) == 0 {
				t.Fatal("rendered nothing")
			}
			linter := lint.All(dir, nil, "tenant-"+name, false)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				}
			}
		})
	}
}

// The CRD charts of Cozystack's tree that the bootstrap and the always-on
// addons install: every CRD one the API server accepts.
func TestCRDCharts(t *testing.T) {
	tree, err := CozystackDir()
	if err != nil {
		t.Fatal(err)
	}
	for chart, crds := range map[string][]string{
		"prometheus-operator-crds": {"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"},
		"vsnap-crd": {
			"volumesnapshotclasses.snapshot.storage.k8s.io",
			"volumesnapshots.snapshot.storage.k8s.io",
			"volumesnapshotcontents.snapshot.storage.k8s.io",
		},
	} {
		t.Run(chart, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(filepath.Join(tree, "system", chart), renderOpts{release: chart, namespace: "cozy-" + chart})
			g.Expect(err).NotTo(HaveOccurred())
			for _, name := range crds {
				crd := objs.must(t, "CustomResourceDefinition/"+name)
				g.Expect(crd.str("spec", "group")).To(Equal(strings.SplitN(name, ".", 2)[1]))
				if strings.HasSuffix(name, ".k8s.io") {
					g.Expect(crd.get("metadata", "annotations")).To(HaveKey("api-approved.kubernetes.io"))
				}
			}
			for key, o := range objs {
				if strings.HasPrefix(key, "CustomResourceDefinition/") {
					expectStructural(t, o)
				}
			}
		})
	}
}

// expectStructural runs the apiserver's own structural-schema check, which
// rejects a CRD at create time; a typo in a field name fails the strict decode.
func expectStructural(t *testing.T, o obj) {
	t.Helper()
	raw, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatalf("%s: %v", o.str("metadata", "name"), err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("%s/%s: no schema", crd.Name, v.Name)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			t.Fatalf("%s/%s: %v", crd.Name, v.Name, err)
		}
		if errs := structuralschema.ValidateStructural(nil, s); len(errs) > 0 {
			t.Errorf("%s/%s: not structural: %v", crd.Name, v.Name, errs.ToAggregate())
		}
	}
}
