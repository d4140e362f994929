// kubectl-tenant is `kubectl tenant`: a kubectl plugin (any binary named
// kubectl-<name> on PATH is one) for tenant admins. Wiring only; the
// commands are in internal/cli.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/cli"
	"github.com/cozystack/tenant-operator/internal/scheme"
	seedpkg "github.com/cozystack/tenant-operator/internal/seed"
)

const usage = `usage: kubectl tenant [--kubeconfig FILE] [--bundle NAME] [--wait 30s] <command>

  seed --api-endpoint HOST:PORT [--version V] [--image REPO] [--namespace NS] [--bundle-file F] [--dry-run -o yaml]
                                  put the operator (and a TenantBundle) into the tenant; idempotent

  addons list                     every addon: enabled, who chose it, Ready, message
  addons enable NAME              switch an addon on (and what it depends on)
  addons disable NAME             switch an addon off (refused while an enabled addon needs it)
  addons set NAME VALUES          set an addon's values (a JSON object)

  catalog list                    every catalog app: who registered it, installed variant, Ready, privileges
  catalog install APP [--variant V] [--component C] [--values FILE]... [--set K=V]... [--confirm-privileged]
                                  install (or change) an app and wait until it is Ready; a privileged
                                  app waits for a confirmation unless --confirm-privileged
  catalog confirm APP             confirm the privileges the operator found in the app (printed first)
  catalog uninstall APP           uninstall an app and wait until its releases are gone
`

func main() {
	fs := flag.NewFlagSet("kubectl-tenant", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	bundleName := fs.String("bundle", "tenant", "name of the TenantBundle")
	waitFor := fs.Duration("wait", 30*time.Second, "how long a change waits for the operator's verdict (0: do not wait)")
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if err := run(context.Background(), *kubeconfig, *bundleName, *waitFor, fs.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, bundleName string, waitFor time.Duration, args []string) error {
	if len(args) >= 1 && args[0] == "seed" {
		return seed(ctx, kubeconfig, args[1:])
	}
	if len(args) < 2 || (args[0] != "addons" && args[0] != "catalog") {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command")
	}
	c, err := newClient(kubeconfig)
	if err != nil {
		return err
	}
	if args[0] == "catalog" {
		return catalog(ctx, &cli.Catalog{Client: c, Out: os.Stdout, Wait: waitFor}, args[1], args[2:])
	}
	a := &cli.Addons{Client: c, Bundle: bundleName, Out: os.Stdout, Wait: waitFor}
	switch cmd, rest := args[1], args[2:]; {
	case cmd == "list" && len(rest) == 0:
		return a.List(ctx)
	case cmd == "enable" && len(rest) == 1:
		return a.Enable(ctx, rest[0])
	case cmd == "disable" && len(rest) == 1:
		return a.Disable(ctx, rest[0])
	case cmd == "set" && len(rest) == 2:
		return a.Set(ctx, rest[0], rest[1])
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("bad arguments to addons %s", cmd)
	}
}

func newClient(kubeconfig string) (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

func catalog(ctx context.Context, c *cli.Catalog, cmd string, rest []string) error {
	if cmd == "list" && len(rest) == 0 {
		return c.List(ctx)
	}
	if len(rest) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("catalog %s needs an app name", cmd)
	}
	app, flags := rest[0], rest[1:]
	switch cmd {
	case "install":
		fs := flag.NewFlagSet("install", flag.ContinueOnError)
		var o cli.InstallOptions
		fs.StringVar(&o.Variant, "variant", "", "variant of the app (default: default)")
		fs.StringVar(&o.Component, "component", "", "component the values are for (default: the only installable one)")
		fs.Func("values", "a YAML values file (repeatable, merged in order)", func(v string) error { o.ValueFiles = append(o.ValueFiles, v); return nil })
		fs.Func("set", "a value, key=value as helm --set (repeatable, over --values)", func(v string) error { o.Set = append(o.Set, v); return nil })
		fs.BoolVar(&o.ConfirmPrivileged, "confirm-privileged", false, "confirm the privileges the operator finds (they are printed)")
		if err := fs.Parse(flags); err != nil {
			return err
		}
		return c.Install(ctx, app, o)
	case "confirm":
		if len(flags) == 0 {
			return c.Confirm(ctx, app)
		}
	case "uninstall":
		if len(flags) == 0 {
			return c.Uninstall(ctx, app)
		}
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("bad arguments to catalog %s", cmd)
}

func seed(ctx context.Context, kubeconfig string, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	var o cli.SeedOptions
	fs.StringVar(&o.APIEndpoint, "api-endpoint", "", "the tenant API server as reachable from its nodes, host:port (required)")
	fs.StringVar(&o.Version, "version", "latest", "operator image tag")
	fs.StringVar(&o.Image, "image", "", "operator image repository (default "+seedpkg.DefaultImage+")")
	fs.StringVar(&o.Namespace, "namespace", "", "operator namespace (default "+seedpkg.DefaultNamespace+")")
	fs.StringVar(&o.BundleFile, "bundle-file", "", "a TenantBundle manifest to seed with the operator")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print what would be applied instead of applying it")
	output := fs.String("o", "yaml", "output format of --dry-run (yaml)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *output != "yaml" {
		return fmt.Errorf("-o %s: only yaml is supported", *output)
	}
	var c client.Client
	if !o.DryRun {
		var err error
		if c, err = newClient(kubeconfig); err != nil {
			return err
		}
	}
	return cli.Seed(ctx, c, o, os.Stdout)
}
