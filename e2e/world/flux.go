package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// FluxNamespace is the RUNTIME_NAMESPACE of the Flux controllers StartFlux
// runs.
const FluxNamespace = "flux-system"

// StartFlux installs the Flux CRDs of the helm-controller and
// source-controller versions pinned in hack/tools (from the module cache) and
// runs both controllers as processes with the admin kubeconfig, watching all
// namespaces. It returns when both report ready. Delete HelmReleases before
// Stop if the cluster outlives the controllers: their finalizer needs
// helm-controller.
func (w *World) StartFlux(ctx context.Context) error {
	w.mu.Lock()
	if w.flux {
		w.mu.Unlock()
		return errors.New("flux already started")
	}
	w.flux = true
	w.mu.Unlock()

	controllers := []struct{ name, module string }{
		{SourceController, "github.com/fluxcd/source-controller"},
		{HelmController, "github.com/fluxcd/helm-controller"},
	}
	for _, c := range controllers {
		version, err := toolVersion(c.name, c.module)
		if err != nil {
			return err
		}
		dir, err := moduleDir(c.module, version)
		if err != nil {
			return err
		}
		if err := w.installCRDs(ctx, filepath.Join(dir, "config", "crd", "bases")); err != nil {
			return fmt.Errorf("%s CRDs: %w", c.name, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FluxNamespace}}
	if err := w.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}

	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	storage := filepath.Join(w.Dir, "flux", "storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return err
	}
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	common := func(metrics, health int) []string {
		return []string{
			"--metrics-addr=" + addr(metrics),
			"--health-addr=" + addr(health),
			"--enable-leader-election=false",
			"--watch-all-namespaces=true",
			"--log-level=debug",
			"--log-encoding=console",
		}
	}
	env := []string{"KUBECONFIG=" + w.Kubeconfig, "RUNTIME_NAMESPACE=" + FluxNamespace}

	sourceBin, err := binary(SourceController)
	if err != nil {
		return err
	}
	source, err := w.startComponent(SourceController, append([]string{sourceBin,
		"--storage-path=" + storage,
		"--storage-addr=" + addr(ports[0]),
		// helm-controller downloads artifacts from this address.
		"--storage-adv-addr=" + addr(ports[0]),
	}, common(ports[1], ports[2])...), env...)
	if err != nil {
		return err
	}
	helmBin, err := binary(HelmController)
	if err != nil {
		return err
	}
	helm, err := w.startComponent(HelmController, append([]string{helmBin}, common(ports[3], ports[4])...), env...)
	if err != nil {
		return err
	}
	watch := []*process{source, helm}
	if err := waitFor(ctx, "source-controller /readyz", 2*time.Minute, watch, httpOK("http://"+addr(ports[2])+"/readyz")); err != nil {
		return err
	}
	return waitFor(ctx, "helm-controller /readyz", 2*time.Minute, watch, httpOK("http://"+addr(ports[4])+"/readyz"))
}

// installCRDs creates every CRD in dir and waits until each is Established.
func (w *World) installCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := w.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		names = append(names, crd.Name)
	}
	return waitFor(ctx, "CRDs in "+dir+" to be established", time.Minute, nil, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := w.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			established := false
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}
