package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/packages"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/bundle"
)

// fluxResult is the Flux-only chain's time.
type fluxResult struct {
	ready        time.Duration
	helmReleases int
}

// measureFluxChain installs the same bundle (same charts, same values) as
// HelmReleases with dependsOn, reconciled by the real helm-controller with
// Cozystack's --requeue-dependency=30s, and times creation to all Ready.
func measureFluxChain(ctx context.Context, nodes int) (fluxResult, error) {
	w, err := newWorld(ctx, "bench-flux", nodes, map[string][]string{
		world.HelmController: {"--requeue-dependency=30s"},
	})
	if err != nil {
		return fluxResult{}, err
	}
	defer w.Stop(false)
	comps, facts, err := plan(w)
	if err != nil {
		return fluxResult{}, err
	}
	var rels []chainRelease
	for _, c := range comps {
		rels = append(rels, chainRelease{name: c.Name, chartPath: c.Chart.Path, release: c.Release.Name,
			namespace: c.Release.Namespace, dependsOn: c.DependsOn, values: bundle.Values(c, facts, nil)})
	}
	took, err := runChain(ctx, w, rels, nil, nil)
	if err != nil {
		return fluxResult{}, err
	}
	return fluxResult{ready: took, helmReleases: len(rels)}, nil
}

// chainRelease is one HelmRelease of a chain the real helm-controller
// reconciles: the chart in Cozystack's tree, where it goes, what it waits
// for.
type chainRelease struct {
	name, chartPath, release, namespace string
	dependsOn                           []string
	values                              map[string]any
}

// runChain starts Flux in w, pushes the releases' charts from Cozystack's
// tree as OCI Helm charts, creates a HelmRepository and every HelmRelease
// at once (shaped further by shape, when given) and returns the time from
// their creation until a watch, opened before, has delivered every one
// Ready. The HelmReleases are deleted afterwards: helm-controller's
// finalizers would outlive it otherwise. A probe, when given, watches
// Flux's memory from its start until after the releases are Ready.
func runChain(ctx context.Context, w *world.World, rels []chainRelease, shape func(*helmv2.HelmRelease), probe *footprintProbe) (time.Duration, error) {
	if err := w.StartFlux(ctx); err != nil {
		return 0, err
	}
	if probe != nil {
		if err := probe.start(w); err != nil {
			return 0, err
		}
	}
	c, err := client.New(w.Config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return 0, err
	}
	for _, add := range []func(*runtime.Scheme) error{helmv2.AddToScheme, sourcev1.AddToScheme} {
		if err := add(c.Scheme()); err != nil {
			return 0, err
		}
	}
	tree, err := packages.CozystackDir()
	if err != nil {
		return 0, err
	}
	ns := world.FluxNamespace
	var hrs []*helmv2.HelmRelease
	for _, r := range rels {
		dir := filepath.Join(tree, r.chartPath)
		if _, err := packages.PushChart(ctx, w.RegistryHost, "charts", dir); err != nil {
			return 0, err
		}
		ch, err := loader.LoadDir(dir)
		if err != nil {
			return 0, err
		}
		hr, err := r.helmRelease(ch.Name(), ns)
		if err != nil {
			return 0, err
		}
		if shape != nil {
			shape(hr)
		}
		hrs = append(hrs, hr)
	}
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: sourcev1.HelmRepositorySpec{URL: "oci://" + w.RegistryHost + "/charts", Type: "oci", Insecure: true,
			Interval: metav1.Duration{Duration: 5 * time.Minute}},
	}
	wc, err := watchingClient(w.Config)
	if err != nil {
		return 0, err
	}
	ready, err := watchUntil(ctx, wc, &helmv2.HelmReleaseList{}, 10*time.Minute, func(objs []runtime.Object) (bool, error) {
		n := 0
		for _, o := range objs {
			if conditions.IsReady(o.(*helmv2.HelmRelease)) {
				n++
			}
		}
		return n == len(hrs), nil
	}, client.InNamespace(ns))
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := c.Create(ctx, repo); err != nil {
		return 0, err
	}
	for _, hr := range hrs {
		if err := c.Create(ctx, hr); err != nil {
			return 0, err
		}
	}
	if err := ready(); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if probe != nil {
		if err := probe.finish(ctx); err != nil {
			return 0, err
		}
	}
	for _, hr := range hrs {
		_ = c.Delete(ctx, hr)
	}
	return took, nil
}

func (r chainRelease) helmRelease(chart, ns string) (*helmv2.HelmRelease, error) {
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			Interval:         metav1.Duration{Duration: 5 * time.Minute},
			ReleaseName:      r.release,
			TargetNamespace:  r.namespace,
			StorageNamespace: r.namespace,
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: chart, Version: "*",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			}},
			Install: &helmv2.Install{CreateNamespace: true,
				Remediation: &helmv2.InstallRemediation{Retries: -1}},
		},
	}
	if len(r.values) > 0 {
		raw, err := json.Marshal(r.values)
		if err != nil {
			return nil, err
		}
		hr.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
	}
	for _, dep := range r.dependsOn {
		hr.Spec.DependsOn = append(hr.Spec.DependsOn, meta.DependencyReference{Name: dep})
	}
	return hr, nil
}
