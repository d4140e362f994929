package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/packages"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/bundle"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// The whole tenant as a user sees it: from the TenantBundle to every
// always-on addon Ready, against the way Cozystack does it today.

// managementRelease is one HelmRelease of Cozystack's management-side
// chain for a tenant (apps/kubernetes templates/helmreleases): the chart,
// where it goes and what it waits for.
type managementRelease struct {
	name, chartPath, release, namespace string
	dependsOn                           []string
	values                              map[string]any
}

// managementChain is what apps/kubernetes renders for a tenant with the
// always-on addons (variant none: no CSI), with Cozystack's dependsOn
// graph: coredns after cilium, metrics-server after cilium and the
// prometheus-operator CRDs, the CRD charts on their own.
func managementChain(w *world.World) ([]managementRelease, error) {
	comps, facts, err := plan(w)
	if err != nil {
		return nil, err
	}
	var out []managementRelease
	for _, c := range comps {
		out = append(out, managementRelease{name: c.Name, chartPath: c.Chart.Path, release: c.Release.Name,
			namespace: c.Release.Namespace, dependsOn: c.DependsOn, values: bundle.Values(c, facts, nil)})
	}
	addons, err := bundle.LoadAddons(bundles.FS, "tenant")
	if err != nil {
		return nil, err
	}
	sel, err := addons.Select(nil)
	if err != nil {
		return nil, err
	}
	for _, a := range sel.Enabled {
		c := a.Components[0]
		deps := append([]string(nil), a.DependsOn...)
		if a.AfterNetwork {
			deps = append(deps, "cilium")
		}
		out = append(out, managementRelease{name: a.Name, chartPath: c.Path, release: c.Install.ReleaseName,
			namespace: c.Install.Namespace, dependsOn: deps})
	}
	return out, nil
}

// measureManagementChain installs the tenant with its always-on addons as
// Cozystack's management side does: HelmReleases reconciled by the real
// helm-controller (--requeue-dependency=30s, its default and Cozystack's)
// into the tenant through an admin kubeconfig Secret, with Cozystack's
// settings (dependsOn, storage namespace = target namespace, unlimited
// install and upgrade retries, 10-minute timeout). The clock runs from the
// HelmReleases' creation to all of them Ready.
func measureManagementChain(ctx context.Context, nodes int) (time.Duration, int, error) {
	w, err := newWorld(ctx, "bench-management", nodes, nil)
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop(false)
	if err := w.StartFlux(ctx); err != nil {
		return 0, 0, err
	}
	rels, err := managementChain(w)
	if err != nil {
		return 0, 0, err
	}
	c, err := client.New(w.Config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return 0, 0, err
	}
	for _, add := range []func(*runtime.Scheme) error{helmv2.AddToScheme, sourcev1.AddToScheme} {
		if err := add(c.Scheme()); err != nil {
			return 0, 0, err
		}
	}
	tree, err := packages.CozystackDir()
	if err != nil {
		return 0, 0, err
	}
	charts := map[string]string{}
	for _, r := range rels {
		dir := filepath.Join(tree, r.chartPath)
		if _, err := packages.PushChart(ctx, w.RegistryHost, "charts", dir); err != nil {
			return 0, 0, err
		}
		ch, err := loader.LoadDir(dir)
		if err != nil {
			return 0, 0, err
		}
		charts[r.name] = ch.Name()
	}
	ns := world.FluxNamespace
	kubeconfig, err := os.ReadFile(w.Kubeconfig)
	if err != nil {
		return 0, 0, err
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tenant-admin-kubeconfig", Namespace: ns},
		Data: map[string][]byte{"super-admin.svc": kubeconfig}}); err != nil {
		return 0, 0, err
	}
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: sourcev1.HelmRepositorySpec{URL: "oci://" + w.RegistryHost + "/charts", Type: "oci", Insecure: true,
			Interval: metav1.Duration{Duration: 5 * time.Minute}},
	}
	wc, err := watchingClient(w.Config)
	if err != nil {
		return 0, 0, err
	}
	ready, err := watchUntil(ctx, wc, &helmv2.HelmReleaseList{}, 10*time.Minute, func(objs []runtime.Object) (bool, error) {
		n := 0
		for _, o := range objs {
			if conditions.IsReady(o.(*helmv2.HelmRelease)) {
				n++
			}
		}
		return n == len(rels), nil
	}, client.InNamespace(ns))
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := c.Create(ctx, repo); err != nil {
		return 0, 0, err
	}
	for _, r := range rels {
		hr, err := managementHelmRelease(r, charts[r.name], ns)
		if err != nil {
			return 0, 0, err
		}
		if err := c.Create(ctx, hr); err != nil {
			return 0, 0, err
		}
	}
	if err := ready(); err != nil {
		return 0, 0, err
	}
	took := time.Since(start)
	for _, r := range rels {
		_ = c.Delete(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: ns}})
	}
	return took, len(rels), nil
}

func managementHelmRelease(r managementRelease, chart, ns string) (*helmv2.HelmRelease, error) {
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			Interval:         metav1.Duration{Duration: 5 * time.Minute},
			Timeout:          &metav1.Duration{Duration: 10 * time.Minute},
			ReleaseName:      r.release,
			TargetNamespace:  r.namespace,
			StorageNamespace: r.namespace,
			KubeConfig:       &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "tenant-admin-kubeconfig", Key: "super-admin.svc"}},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: chart, Version: "*",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			}},
			Install: &helmv2.Install{CreateNamespace: true, Remediation: &helmv2.InstallRemediation{Retries: -1}},
			Upgrade: &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: -1}},
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

// measureWholeTenant times the operator from TenantBundle created (the
// operator running and holding its Lease) to AddonsReady with the
// always-on addons: the network tier in process, then the tenant's own
// Flux, started as the kubelet would once the operator applied it.
func measureWholeTenant(ctx context.Context, bin string, nodes int) (time.Duration, error) {
	w, err := newWorld(ctx, "bench-tenant", nodes, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = w.Stop(false) }()
	url, _, err := framework.PushPackages(ctx, w)
	if err != nil {
		return 0, err
	}
	t, err := framework.StartTenant(ctx, w, bin, framework.SeedConfig(w))
	if err != nil {
		return 0, err
	}
	if err := t.WaitForLeader(ctx); err != nil {
		return 0, err
	}
	if err := t.WaitForBundleKind(ctx); err != nil {
		return 0, err
	}
	bc, err := bundleClient(w.Config)
	if err != nil {
		return 0, err
	}
	ready, err := watchUntil(ctx, bc, &tenantv1.TenantBundleList{}, 10*time.Minute, func(objs []runtime.Object) (bool, error) {
		for _, o := range objs {
			b := o.(*tenantv1.TenantBundle)
			if c := conditions.Get(b, tenantv1.AddonsReadyCondition); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == b.Generation {
				return true, nil
			}
		}
		return false, nil
	}, bundleNamed)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := t.ApplyBundle(ctx, framework.Bundle(w, url)); err != nil {
		return 0, err
	}
	fluxErr := make(chan error, 1)
	go func() { _, err := t.RunFlux(ctx); fluxErr <- err }()
	if err := ready(); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if err := <-fluxErr; err != nil {
		return 0, fmt.Errorf("running Flux: %w", err)
	}
	return took, nil
}
