// Command demo bootstraps a simulated tenant cluster end to end: a world
// with three NotReady fake nodes, Cozystack's real packages artifact in a real
// registry, the operator running from its seeded Deployment, and the
// TenantBundle going Ready. It prints each component's progress with timings
// and leaves the world up for a look around until interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

func main() {
	operator := flag.String("operator", "", "tenant-operator binary (default <repo>/bin/tenant-operator)")
	exitWhenReady := flag.Bool("exit-when-ready", false, "stop the world and exit once Ready instead of waiting for Ctrl-C")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up when not Ready by then")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *operator, *exitWhenReady, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, operator string, exitWhenReady bool, timeout time.Duration) (err error) {
	if operator == "" {
		bin, err := world.BinDir()
		if err != nil {
			return err
		}
		operator = filepath.Join(bin, "tenant-operator")
	}
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Printf("[%6.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	say("starting a tenant world: etcd, kube-apiserver, controller-manager, scheduler, kwok, registry")
	opts := world.Options{Name: "demo", CNIPodSelector: framework.CNISelector}
	for i := 1; i <= 3; i++ {
		opts.Nodes = append(opts.Nodes, world.NodeSpec{Name: fmt.Sprintf("worker-%d", i)})
	}
	w, err := world.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the world")
		if stopErr := w.Stop(err != nil); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	say("world up: 3 nodes NotReady (no CNI), API at %s:%d", w.APIHost, w.APIPort)

	url, digest, err := framework.PushPackages(ctx, w)
	if err != nil {
		return err
	}
	say("pushed the packages artifact %s:%s (%s)", url, framework.PackagesTag, digest)

	t, err := framework.StartTenant(ctx, w, operator, framework.SeedConfig(w))
	if err != nil {
		return err
	}
	say("seeded namespace, RBAC and Deployment; operator running as pid %d (log %s)", t.Operator.Procs[0].PID(), t.Operator.Procs[0].LogPath())
	if err := t.ApplyBundle(ctx, framework.Bundle(w, url)); err != nil {
		return err
	}
	bootstrapStart := time.Now()
	say("TenantBundle applied")
	flux, err := t.RunFlux(ctx)
	if err != nil {
		return err
	}
	say("the operator applied Flux; running its pod's source-controller and helm-controller as pids %d, %d",
		flux.Procs[0].PID(), flux.Procs[1].PID())

	final, err := follow(ctx, w, timeout, say)
	if err != nil {
		return err
	}
	say("TenantBundle Ready and AddonsReady: %.2fs after the TenantBundle was applied", time.Since(bootstrapStart).Seconds())
	printTable(final)

	fmt.Printf("\nLook around:\n  export KUBECONFIG=%s\n  %s get tenantbundles,nodes\n  %s get pods -A -o wide\n",
		w.Kubeconfig, filepath.Join(filepath.Dir(operator), "kubectl"), filepath.Join(filepath.Dir(operator), "kubectl"))
	if exitWhenReady {
		return nil
	}
	fmt.Println("Press Ctrl-C to stop the world.")
	<-ctx.Done()
	return nil
}

// follow watches the TenantBundle and prints every change of a component's
// state until it is Ready.
func follow(ctx context.Context, w *world.World, timeout time.Duration, say func(string, ...any)) (*tenantv1.TenantBundle, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.NewWithWatch(w.Config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return nil, err
	}
	wi, err := c.Watch(ctx, &tenantv1.TenantBundleList{})
	if err != nil {
		return nil, err
	}
	defer wi.Stop()
	last := map[string]string{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("TenantBundle not Ready: %w", ctx.Err())
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil, fmt.Errorf("watch closed")
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			b := ev.Object.(*tenantv1.TenantBundle)
			for _, comp := range b.Status.Components {
				line := fmt.Sprintf("ready=%t %s", comp.Ready, comp.Message)
				if last[comp.Name] != line {
					last[comp.Name] = line
					say("%-10s %s", comp.Name, line)
				}
			}
			for _, typ := range []string{tenantv1.ReadyCondition, tenantv1.AddonsReadyCondition} {
				if r := conditions.Get(b, typ); r != nil && last["@"+typ] != r.Reason+r.Message {
					last["@"+typ] = r.Reason + r.Message
					say("%s=%s %s %s", typ, r.Status, r.Reason, r.Message)
				}
			}
			if conditions.IsReady(b) && conditions.IsTrue(b, tenantv1.AddonsReadyCondition) && b.Status.ObservedGeneration == b.Generation {
				return b, nil
			}
		}
	}
}

func printTable(b *tenantv1.TenantBundle) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCOMPONENT\tTIER\tCHART\tVERSION\tREVISION\tREADY\tMESSAGE")
	for _, c := range b.Status.Components {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%t\t%s\n", c.Name, c.Tier, c.Chart, c.Version, c.Revision, c.Ready, c.Message)
	}
	fmt.Fprintln(tw, strings.Repeat("-", 10))
	for _, c := range b.Status.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	tw.Flush()
}
