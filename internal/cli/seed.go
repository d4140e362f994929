package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/seed"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// SeedOptions are the flags of `kubectl tenant seed`.
type SeedOptions struct {
	APIEndpoint string // host:port reachable from the nodes
	Image       string
	Version     string
	Namespace   string
	BundleFile  string // a TenantBundle manifest to seed, optional
	DryRun      bool
}

// Config turns the options into the seed's typed config.
func (o SeedOptions) Config() (seed.Config, error) {
	host, port, err := net.SplitHostPort(o.APIEndpoint)
	if err != nil {
		return seed.Config{}, fmt.Errorf("--api-endpoint must be host:port reachable from the tenant's nodes: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return seed.Config{}, fmt.Errorf("--api-endpoint port: %w", err)
	}
	cfg := seed.Config{Namespace: o.Namespace, Image: o.Image, Version: o.Version, APIHost: host, APIPort: p}
	if o.BundleFile != "" {
		raw, err := os.ReadFile(o.BundleFile)
		if err != nil {
			return seed.Config{}, err
		}
		b := &tenantv1.TenantBundle{}
		if err := yaml.UnmarshalStrict(raw, b); err != nil {
			return seed.Config{}, fmt.Errorf("%s: %w", o.BundleFile, err)
		}
		cfg.Bundle = b
	}
	return cfg, nil
}

// Seed applies the seed to the tenant (c is its admin client), or with
// DryRun prints what it would apply as YAML.
func Seed(ctx context.Context, c client.Client, o SeedOptions, out io.Writer) error {
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	if o.DryRun {
		objs, err := seed.Objects(cfg)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			u, err := apply.ToUnstructured(obj)
			if err != nil {
				return err
			}
			raw, err := yaml.Marshal(u.Object)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "---\n%s", raw)
		}
		return nil
	}
	if err := seed.Apply(ctx, c, cfg); err != nil {
		return err
	}
	fmt.Fprintf(out, "seeded: operator %s:%s in %s\n", cfg.Image, cfg.Version, cfg.Namespace)
	return nil
}
