package helm

import (
	"context"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestObserveTakesOwnWriteForTheSecret: right after our own install, the
// revision the history shows is the one we wrote, taken as we sent it
// instead of read back; any other revision is read from storage.
func TestObserveTakesOwnWriteForTheSecret(t *testing.T) {
	stored := func(version int, status release.Status, manifest string) *release.Release {
		return &release.Release{Name: "cilium", Namespace: "cozy-cilium", Version: version, Manifest: manifest,
			Info: &release.Info{Status: status}, Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "cilium", Version: "1.0.0"}},
			Labels: map[string]string{DigestLabel: "d"}}
	}
	ours := stored(1, release.StatusDeployed, "kind: ConfigMap\napiVersion: v1\nmetadata: {name: ours}\n")
	theirs := stored(2, release.StatusDeployed, "kind: ConfigMap\napiVersion: v1\nmetadata: {name: theirs}\n")
	cases := []struct {
		name    string
		history []revision
		inStore []*release.Release
		want    string // the first object's name
		reads   int    // revisions read from storage
	}{
		{"history shows our revision: not read back", []revision{{1, "deployed"}}, nil, "ours", 0},
		{"someone else's newer revision: read", []revision{{1, "superseded"}, {2, "deployed"}}, []*release.Release{theirs}, "theirs", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			memory := driver.NewMemory()
			memory.SetNamespace("cozy-cilium")
			mem := &countingDriver{Driver: memory}
			for _, r := range tc.inStore {
				if err := storage.Init(memory).Create(r); err != nil {
					t.Fatal(err)
				}
			}
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
			api := &historyAPI{cache: revisions(tc.history...), etcd: revisions(tc.history...)}
			c := &Client{metadata: api, mapper: mapper, known: map[string]revision{}, written: map[string]*Release{},
				decoded: map[string]decodedRevision{}, actions: map[string]*action.Configuration{"cozy-cilium": {Releases: storage.Init(mem)}}}
			if _, err := c.wrote("cozy-cilium", "cilium", ours, nil); err != nil {
				t.Fatal(err)
			}
			rel, err := c.Observe(context.Background(), "cozy-cilium", "cilium")
			if err != nil {
				t.Fatal(err)
			}
			objs, err := c.Objects(rel)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 1 || objs[0].GetName() != tc.want || objs[0].GetNamespace() != "cozy-cilium" {
				t.Fatalf("objects = %v, want the ConfigMap %s in cozy-cilium", objs, tc.want)
			}
			if mem.reads != tc.reads {
				t.Errorf("revisions read from storage = %d, want %d", mem.reads, tc.reads)
			}
			// The next reconcile's Observe shares the parsed objects.
			again, err := c.Observe(context.Background(), "cozy-cilium", "cilium")
			if err != nil {
				t.Fatal(err)
			}
			objs2, err := c.Objects(again)
			if err != nil {
				t.Fatal(err)
			}
			if &objs2[0] != &objs[0] || mem.reads != tc.reads {
				t.Errorf("second observe parsed or read again (reads %d)", mem.reads)
			}
		})
	}
}

type countingDriver struct {
	driver.Driver
	reads int
}

func (d *countingDriver) Get(key string) (*release.Release, error) {
	d.reads++
	return d.Driver.Get(key)
}
