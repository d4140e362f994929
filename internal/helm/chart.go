package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/internal/values"
)

// TreeChart says how to build a chart from a packages tree, the way
// Cozystack's artifact generator does: the chart directory, libraries copied
// into its charts/, values files merged in order into its values.
type TreeChart struct {
	Tree        string            // root of the extracted packages artifact
	Path        string            // chart directory relative to Tree, e.g. system/cilium
	Libraries   map[string]string // library name -> directory relative to Tree
	ValuesFiles []string          // files inside the chart directory; first overwrites, later merge
}

// Chart is a validated chart and the digest of everything it was built
// from. It is loaded afresh for each install or upgrade (Load): Helm
// mutates the charts it installs, and a reconcile that only checks
// readiness, the common case, never needs the chart at all, so a Chart can
// be cached by digest and shared.
type Chart struct {
	Digest  string
	Version string
	load    func() (*chart.Chart, error)
}

// Load returns a fresh copy of the chart.
func (c *Chart) Load() (*chart.Chart, error) { return c.load() }

// ErrChartInvalid wraps every problem with the chart itself.
var ErrChartInvalid = fmt.Errorf("chart invalid")

// BuildFromTree loads a chart out of a packages tree.
func BuildFromTree(tc TreeChart) (*Chart, error) {
	ch, digest, err := buildFromTree(tc)
	if err != nil {
		return nil, err
	}
	return &Chart{Digest: digest, Version: ch.Metadata.Version, load: func() (*chart.Chart, error) {
		ch, _, err := buildFromTree(tc)
		return ch, err
	}}, nil
}

func buildFromTree(tc TreeChart) (*chart.Chart, string, error) {
	dir := filepath.Join(tc.Tree, filepath.Clean("/"+tc.Path))
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrChartInvalid, tc.Path, err)
	}
	h := sha256.New()
	if err := hashDir(h, dir); err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(tc.Libraries))
	for n := range tc.Libraries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		libDir := filepath.Join(tc.Tree, filepath.Clean("/"+tc.Libraries[name]))
		lib, err := loader.LoadDir(libDir)
		if err != nil {
			return nil, "", fmt.Errorf("%w: library %s of %s: %v", ErrChartInvalid, name, tc.Path, err)
		}
		lib.Metadata.Name = name
		replaceDependency(ch, lib)
		fmt.Fprintf(h, "lib:%s\n", name)
		if err := hashDir(h, libDir); err != nil {
			return nil, "", err
		}
	}
	if len(tc.ValuesFiles) > 0 {
		vals := map[string]any{}
		for i, f := range tc.ValuesFiles {
			raw, err := os.ReadFile(filepath.Join(dir, filepath.Clean("/"+f)))
			if err != nil {
				return nil, "", fmt.Errorf("%w: values file %s of %s: %v", ErrChartInvalid, f, tc.Path, err)
			}
			layer := map[string]any{}
			if err := yaml.Unmarshal(raw, &layer); err != nil {
				return nil, "", fmt.Errorf("%w: values file %s of %s: %v", ErrChartInvalid, f, tc.Path, err)
			}
			if i == 0 {
				vals = layer
			} else {
				vals = values.Merge(vals, layer)
			}
			fmt.Fprintf(h, "values:%s\n", f)
		}
		ch.Values = vals
		// Archives carry the raw values.yaml, not ch.Values: without this a
		// chart installed by Flux would miss every values file but the
		// chart's own.
		if err := setRawValues(ch, vals); err != nil {
			return nil, "", fmt.Errorf("%w: values of %s: %v", ErrChartInvalid, tc.Path, err)
		}
	}
	if err := checkDependencies(ch); err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrChartInvalid, tc.Path, err)
	}
	return ch, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func replaceDependency(ch *chart.Chart, dep *chart.Chart) {
	deps := ch.Dependencies()[:0:0]
	for _, d := range ch.Dependencies() {
		if d.Name() != dep.Name() {
			deps = append(deps, d)
		}
	}
	ch.SetDependencies(append(deps, dep)...)
}

// checkDependencies refuses a chart whose Chart.yaml names a subchart that is
// neither vendored nor supplied as a library: Helm would silently render
// without it.
func checkDependencies(ch *chart.Chart) error {
	if ch.Metadata.Dependencies == nil {
		return nil
	}
	return action.CheckDependencies(ch, ch.Metadata.Dependencies)
}

func hashDir(h interface{ Write([]byte) (int, error) }, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(raw)
		fmt.Fprintf(h, "%s %x\n", filepath.ToSlash(rel), sum)
		return nil
	})
}

func setRawValues(ch *chart.Chart, vals map[string]any) error {
	data, err := yaml.Marshal(vals)
	if err != nil {
		return err
	}
	for _, f := range ch.Raw {
		if f.Name == chartutil.ValuesfileName {
			f.Data = data
			return nil
		}
	}
	ch.Raw = append(ch.Raw, &chart.File{Name: chartutil.ValuesfileName, Data: data})
	return nil
}
