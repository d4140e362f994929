// Package charts holds the test-only chart of a made-up backend (the fake
// variant), which no real project ships. The OpenStack charts are
// cloud-provider-openstack's own (e2e/packages tests them).
package charts

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// The same small helpers as e2e/packages/charts_test.go; test files cannot be
// imported across packages.

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

func (o obj) containerNamed(name string) obj {
	cs, _ := o.podSpec()["containers"].([]any)
	for _, c := range cs {
		if m, _ := c.(map[string]any); m["name"] == name {
			return obj(m)
		}
	}
	return nil
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

// volume returns the pod volume with the given name, nil if there is none.
func (o obj) volume(name string) obj {
	vs, _ := o.podSpec()["volumes"].([]any)
	for _, v := range vs {
		if m, _ := v.(map[string]any); m["name"] == name {
			return obj(m)
		}
	}
	return nil
}

type rendered struct {
	objs map[string]obj // "Kind/name" -> object
	raw  string         // everything Helm would send, hooks included
}

func (r rendered) must(t *testing.T, kindName string) obj {
	t.Helper()
	o, ok := r.objs[kindName]
	if !ok {
		keys := make([]string, 0, len(r.objs))
		for k := range r.objs {
			keys = append(keys, k)
		}
		t.Fatalf("%s not rendered; got %v", kindName, keys)
	}
	return o
}

const namespace = "kube-system"

// render does what `helm template` does: client-only install, dry run.
func render(chartDir string, values map[string]any) (rendered, error) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return rendered{}, err
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = chartDir
	inst.Namespace = namespace
	if values == nil {
		values = map[string]any{}
	}
	rel, err := inst.Run(ch, values)
	if err != nil {
		return rendered{}, err
	}

	out := rendered{objs: map[string]obj{}, raw: rel.Manifest}
	for _, h := range rel.Hooks {
		out.raw += "\n---\n" + h.Manifest
	}
	for _, m := range releaseutil.SplitManifests(out.raw) {
		var o obj
		if err := yaml.Unmarshal([]byte(m), &o); err != nil {
			return rendered{}, err
		}
		if o == nil {
			continue
		}
		out.objs[o.str("kind")+"/"+o.str("metadata", "name")] = o
	}
	return out, nil
}

const fake = "fake-cloud-node"

func TestChartsRenderAndLint(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var charts []string
	for _, e := range entries {
		if e.IsDir() {
			charts = append(charts, e.Name())
		}
	}
	// A chart added without a test of its own would still be linted, but
	// one silently dropped should fail here.
	NewWithT(t).Expect(charts).To(ConsistOf(fake))

	for _, name := range charts {
		t.Run(name, func(t *testing.T) {
			r, err := render(name, nil)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if len(r.objs) == 0 {
				t.Fatal("rendered nothing")
			}
			linter := lint.All(name, nil, namespace, false)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				}
			}
		})
	}
}

func TestFakeCloudNode(t *testing.T) {
	g := NewWithT(t)
	r, err := render(fake, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.objs).To(HaveLen(1))
	ds := r.must(t, "DaemonSet/fake-cloud-node")
	g.Expect(ds.get("spec", "template", "metadata", "labels")).To(Equal(map[string]any{"app": "fake-cloud-node"}))
	g.Expect(ds.podSpec()).NotTo(HaveKey("hostNetwork"))
	g.Expect(ds.str("metadata", "namespace")).To(Equal(namespace))
}
