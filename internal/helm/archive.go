package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// Archive packages a chart the way `helm package` does, with every
// timestamp fixed, so that the same chart gives the same bytes: the bytes
// are served to helm-controller under their digest, and a digest that
// changed on every rebuild would upgrade every release after each operator
// restart.
func Archive(c *Chart) ([]byte, error) {
	ch, err := c.Load()
	if err != nil {
		return nil, err
	}
	return archive(ch)
}

func archive(ch *chart.Chart) ([]byte, error) {
	dir, err := os.MkdirTemp("", "chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChartInvalid, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return normalize(f)
}

// normalize rewrites a .tgz with zero modification times and no gzip
// header metadata; entry order and contents are kept.
func normalize(r io.Reader) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = time.Unix(0, 0).UTC(), time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// ValidateValues checks values against the chart's values.schema.json (and
// its subcharts'), coalesced with the chart's defaults the way an install
// would; the error wraps ErrValuesRejected.
func ValidateValues(c *Chart, values map[string]any) error {
	ch, err := c.Load()
	if err != nil {
		return err
	}
	merged, err := chartutil.CoalesceValues(ch, values)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrValuesRejected, err)
	}
	if err := chartutil.ValidateAgainstSchema(ch, merged); err != nil {
		return fmt.Errorf("%w: %v", ErrValuesRejected, err)
	}
	return nil
}

// Render renders the chart as helm-controller will, offline: dependencies
// processed as Helm processes them before rendering (conditions and tags
// drop subcharts, import-values lift their values), against caps (the
// cluster's version and served APIs; nil means Helm's built-in defaults),
// once as an install and once as an upgrade, since a chart may render
// differently on either path. It returns what Helm would apply by file
// name, prefixed with the path ("install/", "upgrade/"): the templates and
// the files of every crds/ folder.
func Render(c *Chart, values map[string]any, releaseName, namespace string, caps *chartutil.Capabilities) (map[string]string, error) {
	if caps == nil {
		caps = chartutil.DefaultCapabilities
	}
	out := map[string]string{}
	for _, install := range []bool{true, false} {
		ch, err := c.Load()
		if err != nil {
			return nil, err
		}
		if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrValuesRejected, err)
		}
		vals, err := chartutil.ToRenderValues(ch, values,
			chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: install, IsUpgrade: !install, Revision: renderedRevision(install)}, caps)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrValuesRejected, err)
		}
		rendered, err := engine.Render(ch, vals)
		if err != nil {
			return nil, err
		}
		prefix := "upgrade/"
		if install {
			prefix = "install/"
		}
		for name, m := range rendered {
			out[prefix+name] = m
		}
		// Helm applies the files of every crds/ folder as they are, before
		// the templates; helm-controller even replaces existing CRDs.
		for _, crd := range ch.CRDObjects() {
			out[prefix+crd.Filename] = string(crd.File.Data)
		}
	}
	return out, nil
}

// renderedRevision is the release revision each path renders with: the
// first, or a later one.
func renderedRevision(install bool) int {
	if install {
		return 1
	}
	return 2
}

// lookupCall finds a call of Helm's lookup function inside a template
// action; a comment that names it matches too, which costs a confirmation
// at worst.
var lookupCall = regexp.MustCompile(`\{\{[^}]*\blookup\b`)

// TemplatesCallingLookup names the chart's templates (its subcharts'
// included) that call lookup: what they render depends on the cluster at
// the moment helm-controller renders, which no rendering done beforehand
// can see.
func TemplatesCallingLookup(c *Chart) ([]string, error) {
	ch, err := c.Load()
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(ch *chart.Chart)
	walk = func(ch *chart.Chart) {
		for _, t := range ch.Templates {
			if lookupCall.Match(t.Data) {
				out = append(out, path.Join(ch.ChartFullPath(), t.Name))
			}
		}
		for _, d := range ch.Dependencies() {
			walk(d)
		}
	}
	walk(ch)
	sort.Strings(out)
	return out, nil
}
