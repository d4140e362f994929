package packages

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// built is a component's chart, built and archived once per input.
type built struct {
	chart    *helm.Chart
	artifact *meta.Artifact
}

// chartCache keys built charts by everything they are built from, so a
// reconcile that changes nothing neither rebuilds nor re-archives.
type chartCache struct {
	mu    sync.Mutex
	items map[string]*built
}

func (c *chartCache) get(key string) *built {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[key]
}

func (c *chartCache) put(key string, b *built) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[string]*built{}
	}
	c.items[key] = b
}

// chartArtifact builds the component's chart the way Cozystack's artifact
// generator does (libraries vendored, values files merged), stores its
// archive and checks values against the chart's schema, so a wrong value
// is refused here, with the field named, instead of failing in Flux.
func (r *Reconciler) chartArtifact(t *tree, v *cozyv1.Variant, c cozyv1.Component, name string, values map[string]any) (*built, error) {
	libs := map[string]string{}
	for _, l := range c.Libraries {
		p, ok := libraryPath(v, l)
		if !ok {
			return nil, outcome.Terminal(ReasonInvalidConfiguration, "variant %s: component %s uses library %q, which the variant does not define", v.Name, c.Name, l)
		}
		libs[l] = p
	}
	key := strings.Join([]string{t.Digest, t.Base, c.Path, fmt.Sprint(libs), strings.Join(c.ValuesFiles, ",")}, "|")
	b := r.charts.get(key)
	if b == nil {
		ch, err := helm.BuildFromTree(helm.TreeChart{Tree: t.Root, Path: c.Path, Libraries: libs, ValuesFiles: c.ValuesFiles})
		if err != nil {
			return nil, outcome.Terminal(ReasonChartInvalid, "component %s (%s): %v", c.Name, c.Path, err)
		}
		data, err := helm.Archive(ch)
		if err != nil {
			return nil, outcome.Terminal(ReasonChartInvalid, "component %s (%s): %v", c.Name, c.Path, err)
		}
		art, err := r.Store.Put(name, ch.Version, data)
		if err != nil {
			return nil, outcome.Retry(ReasonInternalError, err)
		}
		b = &built{chart: ch, artifact: art}
		r.charts.put(key, b)
	}
	if len(values) == 0 {
		return b, nil
	}
	if err := helm.ValidateValues(b.chart, values); err != nil {
		if errors.Is(err, helm.ErrValuesRejected) {
			return nil, outcome.Terminal(ReasonValuesRejected, "spec.components.%s.values: %v", c.Name, err)
		}
		return nil, outcome.Terminal(ReasonChartInvalid, "component %s (%s): %v", c.Name, c.Path, err)
	}
	return b, nil
}

func libraryPath(v *cozyv1.Variant, name string) (string, bool) {
	for _, l := range v.Libraries {
		n := l.Name
		if n == "" {
			n = path.Base(l.Path)
		}
		if n == name {
			return l.Path, true
		}
	}
	return "", false
}
