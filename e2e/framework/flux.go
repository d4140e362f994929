package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/flux"
)

// Flux images, as manifests/flux/flux.yaml names them (without tags).
const (
	SourceControllerImage = "ghcr.io/fluxcd/source-controller"
	HelmControllerImage   = "ghcr.io/fluxcd/helm-controller"
)

// RunFlux waits for the Flux Deployment the operator applies and runs its
// pod with the process runner: the real controllers, with the args, env and
// ServiceAccount of the shipped manifests (the operator injected the API
// endpoint), so the manifests themselves are what is tested.
func (t *Tenant) RunFlux(ctx context.Context) (*world.Workload, error) {
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: flux.Namespace, Name: flux.Deployment}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := t.Client.Get(ctx, key, d)
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the operator to apply %s: %w", key, err)
	}
	bin, err := world.BinDir()
	if err != nil {
		return nil, err
	}
	return t.World.RunWorkload(ctx, d, world.RunOptions{Binaries: map[string]string{
		SourceControllerImage: filepath.Join(bin, world.SourceController),
		HelmControllerImage:   filepath.Join(bin, world.HelmController),
	}})
}
