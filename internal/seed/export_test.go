package seed

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/helm"
)

// The exported chart (hack/seedgen) must install exactly the objects the
// seeder and `kubectl tenant seed` apply: its crds/ (which Helm creates on
// install only) followed by what its templates render.
func TestExportedChartMatchesTheSeed(t *testing.T) {
	crds, err := apply.ReadManifests(os.DirFS(filepath.Join("..", "..", "manifests", "seed", "chart", "crds")), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := helm.BuildFromTree(helm.TreeChart{Tree: os.DirFS(filepath.Join("..", "..", "manifests", "seed")), Path: "chart"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := helm.Render(c, map[string]any{"apiHost": "10.1.2.3", "apiPort": 7443, "version": "v9", "namespace": "ops"}, "seed", "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	rendered := crds
	for name, manifest := range out {
		// Render gives the crds/ files too, which are read above in order,
		// and the upgrade path, which this chart renders alike.
		if !strings.HasPrefix(name, "install/") || !strings.HasSuffix(name, ".yaml") || strings.Contains(name, "/crds/") {
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(manifest)), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatal(err)
			}
			if len(u.Object) > 0 {
				rendered = append(rendered, u)
			}
		}
	}
	objs, err := Objects(Config{Namespace: "ops", Version: "v9", APIHost: "10.1.2.3", APIPort: 7443})
	if err != nil {
		t.Fatal(err)
	}
	if len(rendered) != len(objs) {
		t.Fatalf("chart renders %d objects, the seed has %d", len(rendered), len(objs))
	}
	for i, o := range objs {
		want, err := apply.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		// Both through JSON, as the decoder read the chart's output.
		raw, err := json.Marshal(want.Object)
		if err != nil {
			t.Fatal(err)
		}
		var norm map[string]any
		if err := json.Unmarshal(raw, &norm); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(norm, rendered[i].Object) {
			t.Errorf("object %d (%s %s) differs:\nchart: %v\nseed:  %v", i, want.GetKind(), want.GetName(), rendered[i].Object, norm)
		}
	}
}
