package helm

import (
	"fmt"
	"io"
	"slices"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// TestActionStorageReadsHistoryOnce runs Helm's own install and upgrade
// actions over a history, once on the plain storage and once on an
// action's storage: the history they leave must be the same, and the
// action's storage must have asked the API server (here the driver) once.
func TestActionStorageReadsHistoryOnce(t *testing.T) {
	cases := []struct {
		name   string
		before []release.Status // revisions 1..n
		run    func(cfg *action.Configuration) error
		after  []string // "version:status", oldest first
	}{
		{"first install", nil, install, []string{"1:deployed"}},
		{"install over a failed first install", []release.Status{release.StatusFailed}, install,
			[]string{"1:failed", "2:deployed"}},
		{"upgrade", []release.Status{release.StatusSuperseded, release.StatusDeployed}, upgrade(5),
			[]string{"1:superseded", "2:superseded", "3:deployed"}},
		{"upgrade that prunes the history", []release.Status{release.StatusSuperseded, release.StatusDeployed}, upgrade(2),
			[]string{"2:superseded", "3:deployed"}},
		{"upgrade after a failed upgrade", []release.Status{release.StatusDeployed, release.StatusFailed}, upgrade(5),
			[]string{"1:superseded", "2:failed", "3:deployed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var plainQueries int
			for _, cached := range []bool{false, true} {
				mem := &queryCounter{Driver: driver.NewMemory()}
				for i, st := range tc.before {
					if err := mem.Create(fmt.Sprintf("sh.helm.release.v1.app.v%d", i+1), revisionOf(i+1, st)); err != nil {
						t.Fatal(err)
					}
				}
				cfg := configOn(storage.Init(mem))
				if cached {
					cfg = configOn(newActionStorage(mem))
				}
				mem.queries = 0
				if err := tc.run(cfg); err != nil {
					t.Fatal(err)
				}
				queries := mem.queries
				if got := historyOf(t, mem.Driver); !slices.Equal(got, tc.after) {
					t.Fatalf("cached %v: history = %v, want %v", cached, got, tc.after)
				}
				if !cached {
					plainQueries = queries
					continue
				}
				t.Logf("history reads that reached the driver: %d, Helm's own storage: %d", queries, plainQueries)
				if queries != 1 {
					t.Errorf("history reads that reached the driver = %d, want 1 (Helm's own storage: %d)", queries, plainQueries)
				}
			}
		})
	}
}

// TestActionStorageKeepsUnwrittenChanges: a change Helm makes to a revision
// it read but never writes stays out of what later reads return.
func TestActionStorageKeepsUnwrittenChanges(t *testing.T) {
	mem := driver.NewMemory()
	if err := mem.Create("sh.helm.release.v1.app.v1", revisionOf(1, release.StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	s := newActionStorage(mem)
	last, err := s.Last("app")
	if err != nil {
		t.Fatal(err)
	}
	last.SetStatus(release.StatusSuperseded, "not written")
	again, err := s.Deployed("app")
	if err != nil || again.Version != 1 || again.Info.Description != "" {
		t.Fatalf("deployed = %+v, %v; want revision 1 as stored", again, err)
	}
}

// configOn is an action configuration with releases, rendering without a
// cluster.
func configOn(releases *storage.Storage) *action.Configuration {
	return &action.Configuration{Releases: releases, KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities, Log: func(string, ...any) {}}
}

func install(cfg *action.Configuration) error {
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.Replace = "app", "default", true
	_, err := in.Run(testChart(), nil)
	return err
}

func upgrade(maxHistory int) func(cfg *action.Configuration) error {
	return func(cfg *action.Configuration) error {
		up := action.NewUpgrade(cfg)
		up.Namespace, up.MaxHistory = "default", maxHistory
		_, err := up.Run("app", testChart(), nil)
		return err
	}
}

func testChart() *chart.Chart {
	return &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "app", Version: "1.0.0"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n")}}}
}

func revisionOf(version int, st release.Status) *release.Release {
	return &release.Release{Name: "app", Namespace: "default", Version: version, Chart: testChart(),
		Info: &release.Info{Status: st}, Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n"}
}

func historyOf(t *testing.T, d driver.Driver) []string {
	t.Helper()
	h, err := storage.Init(d).History("app")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(h, func(a, b *release.Release) int { return a.Version - b.Version })
	var out []string
	for _, r := range h {
		out = append(out, fmt.Sprintf("%d:%s", r.Version, r.Info.Status))
	}
	return out
}

type queryCounter struct {
	driver.Driver
	queries int
}

func (d *queryCounter) Query(labels map[string]string) ([]*release.Release, error) {
	d.queries++
	return d.Driver.Query(labels)
}

// TestActionStorageBoundsFailedInstalls: an install over a history of
// failed first installs keeps MaxHistory revisions, with still one read.
func TestActionStorageBoundsFailedInstalls(t *testing.T) {
	mem := &queryCounter{Driver: driver.NewMemory()}
	for v := 1; v <= MaxHistory; v++ {
		if err := mem.Create(fmt.Sprintf("sh.helm.release.v1.app.v%d", v), revisionOf(v, release.StatusFailed)); err != nil {
			t.Fatal(err)
		}
	}
	mem.queries = 0
	if err := install(configOn(newActionStorage(mem))); err != nil {
		t.Fatal(err)
	}
	want := []string{"2:failed", "3:failed", "4:failed", "5:failed", "6:deployed"}
	if got := historyOf(t, mem.Driver); !slices.Equal(got, want) {
		t.Fatalf("history = %v, want %v", got, want)
	}
	if mem.queries != 1 {
		t.Errorf("history reads that reached the driver = %d, want 1", mem.queries)
	}
}
