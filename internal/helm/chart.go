package helm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io/fs"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/ignore"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/internal/values"
)

// TreeChart says how to build a chart from a packages tree, the way
// Cozystack's artifact generator does: the chart directory, libraries copied
// into its charts/, values files merged in order into its values.
type TreeChart struct {
	Tree        fs.FS             // the packages artifact's tree
	Path        string            // chart directory inside Tree, e.g. system/cilium
	Libraries   map[string]string // library name -> directory inside Tree
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
	// Note says why this version was chosen when it is not the obvious
	// one (a repository chart's fallback version).
	Note string
	load func() (*chart.Chart, error)
}

// Load returns a fresh copy of the chart.
func (c *Chart) Load() (*chart.Chart, error) { return c.load() }

// ErrChartInvalid wraps every problem with the chart itself.
var ErrChartInvalid = fmt.Errorf("chart invalid")

// BuildFromTree loads a chart out of a packages tree. The digest is taken
// once; Load reads the files again, but neither hashes them nor merges the
// values files again.
func BuildFromTree(tc TreeChart) (*Chart, error) {
	h := sha256.New()
	ch, err := loadTree(tc, h, nil)
	if err != nil {
		return nil, err
	}
	var rawValues []byte
	if len(tc.ValuesFiles) > 0 {
		rawValues = rawFile(ch, chartutil.ValuesfileName)
	}
	return &Chart{Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), Version: ch.Metadata.Version, load: func() (*chart.Chart, error) {
		return loadTree(TreeChart{Tree: tc.Tree, Path: tc.Path, Libraries: tc.Libraries}, nil, rawValues)
	}}, nil
}

// loadTree loads the chart and its libraries, writing what identifies them
// to h when h is not nil. The values come from tc.ValuesFiles, or, when not
// nil, from an earlier merge of them (merged).
func loadTree(tc TreeChart, h hash.Hash, merged []byte) (*chart.Chart, error) {
	dir := treePath(tc.Path)
	ch, err := loadDir(tc.Tree, dir, h)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrChartInvalid, tc.Path, err)
	}
	names := make([]string, 0, len(tc.Libraries))
	for n := range tc.Libraries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if h != nil {
			fmt.Fprintf(h, "lib:%s\n", name)
		}
		lib, err := loadDir(tc.Tree, treePath(tc.Libraries[name]), h)
		if err != nil {
			return nil, fmt.Errorf("%w: library %s of %s: %v", ErrChartInvalid, name, tc.Path, err)
		}
		lib.Metadata.Name = name
		replaceDependency(ch, lib)
	}
	switch {
	case merged != nil:
		vals := map[string]any{}
		if err := yaml.Unmarshal(merged, &vals); err != nil {
			return nil, fmt.Errorf("%w: values of %s: %v", ErrChartInvalid, tc.Path, err)
		}
		setValues(ch, vals, merged)
	case len(tc.ValuesFiles) > 0:
		if err := mergeValuesFiles(tc, dir, ch, h); err != nil {
			return nil, err
		}
	}
	if err := checkDependencies(ch); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrChartInvalid, tc.Path, err)
	}
	return ch, nil
}

func mergeValuesFiles(tc TreeChart, dir string, ch *chart.Chart, h hash.Hash) error {
	vals := map[string]any{}
	for i, f := range tc.ValuesFiles {
		raw, err := fs.ReadFile(tc.Tree, path.Join(dir, treePath(f)))
		if err != nil {
			return fmt.Errorf("%w: values file %s of %s: %v", ErrChartInvalid, f, tc.Path, err)
		}
		layer := map[string]any{}
		if err := yaml.Unmarshal(raw, &layer); err != nil {
			return fmt.Errorf("%w: values file %s of %s: %v", ErrChartInvalid, f, tc.Path, err)
		}
		if i == 0 {
			vals = layer
		} else {
			vals = values.Merge(vals, layer)
		}
		if h != nil {
			fmt.Fprintf(h, "values:%s\n", f)
		}
	}
	data, err := yaml.Marshal(vals)
	if err != nil {
		return fmt.Errorf("%w: values of %s: %v", ErrChartInvalid, tc.Path, err)
	}
	setValues(ch, vals, data)
	return nil
}

// treePath turns a path of the bundle into one inside the tree; it cannot
// climb out of it.
func treePath(p string) string {
	if p = strings.TrimPrefix(path.Clean("/"+p), "/"); p == "" {
		return "."
	}
	return p
}

// loadDir loads the chart directory dir of fsys as Helm's LoadDir loads one
// from disk: .helmignore and Helm's default rules honoured, a byte-order
// mark dropped. Every file of the directory, ignored or not, is written to
// h: the digest is of the directory as shipped.
func loadDir(fsys fs.FS, dir string, h hash.Hash) (*chart.Chart, error) {
	rules := ignore.Empty()
	if raw, err := fs.ReadFile(fsys, path.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(raw)); err != nil {
			return nil, err
		}
	}
	rules.AddDefaults()
	var files []*loader.BufferedFile
	skipped := map[string]bool{}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := relative(dir, p)
		if rel == "" {
			return nil
		}
		// An ignored directory is still walked: its files are part of
		// the digest, only not of the chart.
		if d.IsDir() {
			skipped[rel] = skipped[path.Dir(rel)] || ignored(rules, rel, d)
			return nil
		}
		raw, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if h != nil {
			fmt.Fprintf(h, "%s %x\n", rel, sha256.Sum256(raw))
		}
		if skipped[path.Dir(rel)] || ignored(rules, rel, d) {
			return nil
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return fmt.Errorf("cannot load irregular file %s", rel)
		}
		if int64(len(raw)) > loader.MaxDecompressedFileSize {
			return fmt.Errorf("chart file %q is larger than the maximum file size %d", rel, loader.MaxDecompressedFileSize)
		}
		files = append(files, &loader.BufferedFile{Name: rel, Data: bytes.TrimPrefix(raw, utf8BOM)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(files)
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// relative is p, a path fs.WalkDir gave under dir, relative to dir ("" for
// dir itself).
func relative(dir, p string) string {
	switch {
	case p == dir:
		return ""
	case dir == ".":
		return p
	}
	return strings.TrimPrefix(p, dir+"/")
}

func ignored(rules *ignore.Rules, rel string, d fs.DirEntry) bool {
	fi, err := d.Info()
	return err == nil && rules.Ignore(rel, fi)
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

// setValues makes vals, whose YAML is data, the chart's values: archives
// carry the raw values.yaml, not ch.Values, and without it a chart installed
// by Flux would miss every values file but the chart's own.
func setValues(ch *chart.Chart, vals map[string]any, data []byte) {
	ch.Values = vals
	for _, f := range ch.Raw {
		if f.Name == chartutil.ValuesfileName {
			f.Data = data
			return
		}
	}
	ch.Raw = append(ch.Raw, &chart.File{Name: chartutil.ValuesfileName, Data: data})
}

func rawFile(ch *chart.Chart, name string) []byte {
	for _, f := range ch.Raw {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}
