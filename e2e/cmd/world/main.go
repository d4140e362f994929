// Command world starts a simulated tenant cluster (see e2e/world) with three
// fake nodes and the node-network simulator on k8s-app=cilium, prints how to
// reach it and keeps it up until SIGINT or SIGTERM. It backs `make world`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cozystack/tenant-operator/e2e/world"
)

func main() {
	name := flag.String("name", "tenant", "world name, used in directory and artifact names")
	nodes := flag.Int("nodes", 3, "number of fake nodes")
	keep := flag.Bool("keep-logs", false, "keep the world directory and copy logs to the artifacts directory on exit")
	flux := flag.Bool("flux", false, "also run source-controller and helm-controller")
	flag.Parse()
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr)))

	if err := run(*name, *nodes, *keep, *flux); err != nil {
		fmt.Fprintln(os.Stderr, "world:", err)
		os.Exit(1)
	}
}

func run(name string, nodeCount int, keep, flux bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	opts := world.Options{Name: name, CNIPodSelector: map[string]string{"k8s-app": "cilium"}}
	for i := 1; i <= nodeCount; i++ {
		opts.Nodes = append(opts.Nodes, world.NodeSpec{Name: fmt.Sprintf("%s-worker-%d", name, i)})
	}
	started := time.Now()
	w, err := world.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "stopping the world")
		if err := w.Stop(keep); err != nil {
			fmt.Fprintln(os.Stderr, "world: stop:", err)
		}
	}()
	if flux {
		if err := w.StartFlux(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "world %q is up in %s (dir %s)\n", w.Name, time.Since(started).Round(100*time.Millisecond), w.Dir)
	fmt.Printf("export KUBECONFIG=%s\n", w.Kubeconfig)
	fmt.Printf("# API server: https://%s:%d (CA %s)\n", w.APIHost, w.APIPort, w.CAFile)
	fmt.Printf("# OCI registry (plain HTTP): %s\n", w.RegistryHost)
	fmt.Printf("# logs: %s\n", filepath.Dir(w.LogPath(world.Etcd)))
	<-ctx.Done()
	return nil
}
