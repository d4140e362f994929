package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/internal/cli"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// toggleAddon is enabled and disabled in turn: no dependencies, held until
// the network tier is Ready (which it is), one HelmRelease.
const toggleAddon, toggleNamespace = "velero", "cozy-velero"

// measureToggle enables the addon the way `kubectl tenant addons enable`
// does and times the write until a watch sees its HelmRelease created,
// then disables it and waits until the release is uninstalled and gone.
func measureToggle(ctx context.Context, t *framework.Tenant, n int) ([]time.Duration, error) {
	c, err := client.NewWithWatch(t.World.Config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return nil, err
	}
	addons := &cli.Addons{Client: c, Bundle: "tenant", Out: io.Discard}
	var out []time.Duration
	for range n {
		wi, err := c.Watch(ctx, &helmv2.HelmReleaseList{}, client.InNamespace(toggleNamespace))
		if err != nil {
			return nil, err
		}
		start := time.Now()
		if err := addons.Enable(ctx, toggleAddon); err != nil {
			wi.Stop()
			return nil, err
		}
		created, err := firstAdded(ctx, wi)
		wi.Stop()
		if err != nil {
			return nil, err
		}
		out = append(out, created.Sub(start))
		if err := addons.Disable(ctx, toggleAddon); err != nil {
			return nil, err
		}
		if err := waitReleaseGone(ctx, c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func firstAdded(ctx context.Context, wi watch.Interface) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no HelmRelease created: %w", ctx.Err())
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return time.Time{}, fmt.Errorf("watch closed")
			}
			if ev.Type == watch.Added {
				return time.Now(), nil
			}
		}
	}
}

func waitReleaseGone(ctx context.Context, c client.Client) error {
	return wait.PollUntilContextTimeout(ctx, pollEvery, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list helmv2.HelmReleaseList
		if err := c.List(ctx, &list, client.InNamespace(toggleNamespace)); err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
}

// waitAddonsReady waits for AddonsReady at the current generation.
func waitAddonsReady(ctx context.Context, t *framework.Tenant) error {
	return wait.PollUntilContextTimeout(ctx, pollEvery, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		b, err := t.Bundle(ctx, "tenant")
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return conditions.IsTrue(b, tenantv1.AddonsReadyCondition) && b.Status.ObservedGeneration == b.Generation, nil
	})
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p*float64(len(s))+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}
