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

// fluxResult is the Flux-only chain's time and helm-controller's footprint.
type fluxResult struct {
	ready        time.Duration
	helmRSS      framework.Memory
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
	if err := w.StartFlux(ctx); err != nil {
		return fluxResult{}, err
	}
	comps, facts, err := plan(w)
	if err != nil {
		return fluxResult{}, err
	}
	c, err := client.New(w.Config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return fluxResult{}, err
	}
	if err := helmv2.AddToScheme(c.Scheme()); err != nil {
		return fluxResult{}, err
	}
	if err := sourcev1.AddToScheme(c.Scheme()); err != nil {
		return fluxResult{}, err
	}
	tree, err := packages.CozystackDir()
	if err != nil {
		return fluxResult{}, err
	}
	chartNames := map[string]string{}
	for _, comp := range comps {
		dir := filepath.Join(tree, comp.Chart.Path)
		if _, err := packages.PushChart(ctx, w.RegistryHost, "charts", dir); err != nil {
			return fluxResult{}, err
		}
		ch, err := loader.LoadDir(dir)
		if err != nil {
			return fluxResult{}, err
		}
		chartNames[comp.Name] = ch.Name()
	}
	ns := world.FluxNamespace
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: sourcev1.HelmRepositorySpec{URL: "oci://" + w.RegistryHost + "/charts", Type: "oci", Insecure: true,
			Interval: metav1.Duration{Duration: 5 * time.Minute}},
	}
	wc, err := watchingClient(w.Config)
	if err != nil {
		return fluxResult{}, err
	}
	ready, err := watchUntil(ctx, wc, &helmv2.HelmReleaseList{}, 5*time.Minute, func(objs []runtime.Object) (bool, error) {
		ready := 0
		for _, o := range objs {
			if conditions.IsReady(o.(*helmv2.HelmRelease)) {
				ready++
			}
		}
		return ready == len(comps), nil
	}, client.InNamespace(ns))
	if err != nil {
		return fluxResult{}, err
	}
	start := time.Now()
	if err := c.Create(ctx, repo); err != nil {
		return fluxResult{}, err
	}
	for _, comp := range comps {
		if err := c.Create(ctx, helmRelease(comp, chartNames[comp.Name], facts, ns)); err != nil {
			return fluxResult{}, err
		}
	}
	if err := ready(); err != nil {
		return fluxResult{}, err
	}
	res := fluxResult{ready: time.Since(start), helmReleases: len(comps)}
	pid, err := pidOf(w, "helm-controller")
	if err != nil {
		return fluxResult{}, err
	}
	if res.helmRSS, err = framework.ReadMemory(pid); err != nil {
		return fluxResult{}, err
	}
	// helm-controller's finalizers would outlive it otherwise.
	for _, comp := range comps {
		_ = c.Delete(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: comp.Name, Namespace: ns}})
	}
	return res, nil
}

func helmRelease(comp bundle.Component, chart string, facts bundle.Facts, ns string) *helmv2.HelmRelease {
	raw, _ := json.Marshal(bundle.Values(comp, facts, nil))
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: comp.Name, Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			Interval:         metav1.Duration{Duration: 5 * time.Minute},
			ReleaseName:      comp.Release.Name,
			TargetNamespace:  comp.Release.Namespace,
			StorageNamespace: comp.Release.Namespace,
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: chart, Version: "*",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			}},
			Install: &helmv2.Install{CreateNamespace: true,
				Remediation: &helmv2.InstallRemediation{Retries: -1}},
			Values: &apiextensionsv1.JSON{Raw: raw},
		},
	}
	for _, dep := range comp.DependsOn {
		hr.Spec.DependsOn = append(hr.Spec.DependsOn, meta.DependencyReference{Name: dep})
	}
	return hr
}
