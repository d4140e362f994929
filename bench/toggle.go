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
	c, addons, err := addonsCLI(t)
	if err != nil {
		return nil, err
	}
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
		if err := waitReleasesGone(ctx, c, toggleNamespace); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addonsCLI is a watching client and the CLI's addon commands on it.
func addonsCLI(t *framework.Tenant) (client.WithWatch, *cli.Addons, error) {
	c, err := watchingClient(t.World.Config)
	if err != nil {
		return nil, nil, err
	}
	return c, &cli.Addons{Client: c, Bundle: "tenant", Out: io.Discard}, nil
}

func firstAdded(ctx context.Context, wi watch.Interface) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ev, err := nextEvent(ctx, wi)
		if err != nil {
			return time.Time{}, fmt.Errorf("no HelmRelease created: %w", err)
		}
		if ev.Type == watch.Added {
			return time.Now(), nil
		}
	}
}

func nextEvent(ctx context.Context, wi watch.Interface) (watch.Event, error) {
	select {
	case <-ctx.Done():
		return watch.Event{}, ctx.Err()
	case ev, ok := <-wi.ResultChan():
		if !ok {
			return watch.Event{}, fmt.Errorf("watch closed")
		}
		return ev, nil
	}
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

// The dependency pair: cert-manager dependsOn cert-manager-crds, both off by
// default, each one HelmRelease.
const (
	dependencyAddon, dependentAddon = "cert-manager-crds", "cert-manager"
	dependencyNS, dependentNS       = "cozy-cert-manager-crds", "cozy-cert-manager"
)

// measureDependency enables the pair and times, on one watch of every
// HelmRelease, the moment the dependency's HelmRelease is seen Ready to the
// moment the dependent's HelmRelease is seen created; then disables both and
// waits until both releases are gone. Flux alone would requeue the dependent
// every --requeue-dependency (30 s in Cozystack); the operator creates the
// dependent's HelmRelease only on its dependency's readiness.
func measureDependency(ctx context.Context, t *framework.Tenant, n int) ([]time.Duration, error) {
	c, addons, err := addonsCLI(t)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for range n {
		wi, err := c.Watch(ctx, &helmv2.HelmReleaseList{})
		if err != nil {
			return nil, err
		}
		if err := addons.Enable(ctx, dependencyAddon); err == nil {
			err = addons.Enable(ctx, dependentAddon)
		}
		if err != nil {
			wi.Stop()
			return nil, err
		}
		d, err := readyThenCreated(ctx, wi)
		wi.Stop()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
		// The CLI refuses to disable the CRDs while cert-manager is on.
		if err := addons.Disable(ctx, dependentAddon); err == nil {
			err = addons.Disable(ctx, dependencyAddon)
		}
		if err != nil {
			return nil, err
		}
		for _, ns := range []string{dependentNS, dependencyNS} {
			if err := waitReleasesGone(ctx, c, ns); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// readyThenCreated returns the time from the dependency's HelmRelease first
// seen Ready to the dependent's HelmRelease first seen.
func readyThenCreated(ctx context.Context, wi watch.Interface) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var ready time.Time
	for {
		ev, err := nextEvent(ctx, wi)
		if err != nil {
			return 0, fmt.Errorf("%s never followed %s: %w", dependentAddon, dependencyAddon, err)
		}
		hr, isHR := ev.Object.(*helmv2.HelmRelease)
		if !isHR {
			continue
		}
		now := time.Now()
		switch {
		case hr.Namespace == dependencyNS && ready.IsZero() && conditions.IsReady(hr):
			ready = now
		case hr.Namespace == dependentNS:
			if ready.IsZero() {
				return 0, fmt.Errorf("%s's HelmRelease was created before %s was Ready", dependentAddon, dependencyAddon)
			}
			return now.Sub(ready), nil
		}
	}
}

func waitReleasesGone(ctx context.Context, c client.Client, ns string) error {
	return wait.PollUntilContextTimeout(ctx, pollEvery, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list helmv2.HelmReleaseList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
}
