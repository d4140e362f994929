package main

import (
	"context"
	"fmt"
	"os"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/bundle"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// The whole tenant as a user sees it: from the TenantBundle to every
// always-on addon Ready, against the way Cozystack does it today.

// managementChain is what apps/kubernetes renders for a tenant with the
// always-on addons (variant none: no CSI), with Cozystack's dependsOn
// graph: coredns after cilium, metrics-server after cilium and the
// prometheus-operator CRDs, the CRD charts on their own.
func managementChain(w *world.World) ([]chainRelease, error) {
	comps, facts, err := plan(w)
	if err != nil {
		return nil, err
	}
	var out []chainRelease
	for _, c := range comps {
		out = append(out, chainRelease{name: c.Name, chartPath: c.Chart.Path, release: c.Release.Name,
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
		deps := a.Needs(sel.IsEnabled)
		if a.AfterNetwork {
			deps = append(deps, "cilium")
		}
		out = append(out, chainRelease{name: a.Name, chartPath: c.Path, release: c.Install.ReleaseName,
			namespace: c.Install.Namespace, dependsOn: deps})
	}
	return out, nil
}

// measureManagementChain installs the tenant with its always-on addons as
// Cozystack's management side does: HelmReleases reconciled by the real
// helm-controller (--requeue-dependency=30s) into the tenant through an
// admin kubeconfig Secret, with apps/kubernetes' settings (dependsOn,
// storage namespace = target namespace, unlimited install and upgrade
// retries, 10-minute timeout). The clock runs from the HelmReleases'
// creation to all of them Ready.
func measureManagementChain(ctx context.Context, nodes int, probe *footprintProbe) (time.Duration, int, error) {
	w, err := newWorld(ctx, "bench-management", nodes, map[string][]string{
		world.HelmController: {"--requeue-dependency=30s"},
	})
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop(false)
	rels, err := managementChain(w)
	if err != nil {
		return 0, 0, err
	}
	kubeconfig, err := os.ReadFile(w.Kubeconfig)
	if err != nil {
		return 0, 0, err
	}
	const secret, key = "tenant-admin-kubeconfig", "super-admin.svc"
	if err := w.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: world.FluxNamespace}}); err != nil {
		return 0, 0, err
	}
	if err := w.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: world.FluxNamespace},
		Data: map[string][]byte{key: kubeconfig}}); err != nil {
		return 0, 0, err
	}
	took, err := runChain(ctx, w, rels, func(hr *helmv2.HelmRelease) {
		hr.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: secret, Key: key}}
		hr.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
		hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: -1}}
	}, probe)
	return took, len(rels), err
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
