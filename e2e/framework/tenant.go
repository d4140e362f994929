// Package framework holds what the e2e suites and the demo share on top of
// the test world: building our binaries, pushing the stand-in packages
// artifact, seeding a tenant exactly as the management side would, and
// running the operator from its own Deployment manifest.
package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/packages"
	"github.com/cozystack/tenant-operator/e2e/world"
	"github.com/cozystack/tenant-operator/internal/scheme"
	"github.com/cozystack/tenant-operator/internal/seed"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// CNISelector is how the world's network simulator recognises the CNI
// pods: the label the Cilium chart puts on its agent.
var CNISelector = map[string]string{"k8s-app": "cilium"}

// PackagesRepo and PackagesTag name the packages artifact in the world's
// registry.
const (
	PackagesRepo = "cozystack/packages"
	PackagesTag  = "v1.0.0"
)

// Scheme knows our kinds besides the built-in ones.
func Scheme() *runtime.Scheme { return scheme.New() }

// Client returns an admin client of w that knows our kinds.
func Client(w *world.World) (client.Client, error) {
	return client.New(w.Config, client.Options{Scheme: Scheme()})
}

// BuildOperator compiles cmd/tenant-operator into dir.
func BuildOperator(dir string) (string, error) { return Build(dir, "tenant-operator") }

// Build compiles cmd/<name> into dir.
func Build(dir, name string) (string, error) { return BuildTagged(dir, name, "") }

// BuildTagged compiles cmd/<name> with the build tag into dir: a binary
// with a test-only behaviour compiled in, which no release build has.
func BuildTagged(dir, name, tag string) (string, error) {
	root, err := world.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	if tag != "" {
		out += "-" + tag
	}
	// As `make build` builds them: static and stripped (see the Makefile).
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-tags", tag, "-o", out, "./cmd/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s: %w", name, err)
	}
	return out, nil
}

// PushPackages pushes Cozystack's real packages tree (packages.CozystackDir)
// to the world's registry as Cozystack publishes it, and returns its oci://
// URL and manifest digest.
func PushPackages(ctx context.Context, w *world.World) (url, digest string, err error) {
	return pushPackages(ctx, w)
}

// PushPackagesWithTestApps is PushPackages with our catalog test apps
// (e2e/testdata/packages/apps, which Cozystack does not ship) added to the
// tree, as a platform that publishes apps of its own would.
func PushPackagesWithTestApps(ctx context.Context, w *world.World) (url, digest string, err error) {
	return pushPackages(ctx, w, packages.TestdataDir())
}

func pushPackages(ctx context.Context, w *world.World, overlays ...string) (url, digest string, err error) {
	dir, err := packages.CozystackDir()
	if err != nil {
		return "", "", err
	}
	digest, err = packages.PushFluxArtifact(ctx, w.RegistryHost, PackagesRepo, PackagesTag, dir, overlays...)
	return "oci://" + w.RegistryHost + "/" + PackagesRepo, digest, err
}

// Bundle is the TenantBundle the management side would seed for w.
func Bundle(w *world.World, url string) *tenantv1.TenantBundle {
	return &tenantv1.TenantBundle{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenantv1.GroupVersion.String(), Kind: "TenantBundle"},
		ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		Spec: tenantv1.TenantBundleSpec{
			Cluster: tenantv1.ClusterFacts{
				APIEndpoint: fmt.Sprintf("%s:%d", w.APIHost, w.APIPort),
				PodCIDR:     "10.243.0.0/16", ServiceCIDR: "10.95.0.0/16",
			},
			Packages: tenantv1.PackagesSource{URL: url, Tag: PackagesTag, Insecure: true},
			// A generic cluster; the variant suites set their own.
			Variant: "none",
		},
	}
}

// Tenant is a seeded tenant world with the operator running.
type Tenant struct {
	World    *world.World
	Client   client.Client
	Seed     seed.Config
	Operator *world.Workload
	Binary   string
}

// SeedConfig is the seed the management side would render for w.
func SeedConfig(w *world.World) seed.Config {
	return seed.Config{APIHost: w.APIHost, APIPort: w.APIPort, Version: "dev"}
}

// StartTenant applies the seed as the management side does (seed.Apply: the
// CRDs, namespace, RBAC and Deployment, then cfg.Bundle if set) and runs the
// operator from the seeded Deployment.
func StartTenant(ctx context.Context, w *world.World, binary string, cfg seed.Config) (*Tenant, error) {
	c, err := Client(w)
	if err != nil {
		return nil, err
	}
	t := &Tenant{World: w, Client: c, Seed: cfg}
	if err := seed.Apply(ctx, c, cfg); err != nil {
		return nil, err
	}
	if err := t.run(ctx, binary); err != nil {
		return nil, err
	}
	return t, nil
}

// run runs binary as the operator, from the seeded Deployment.
func (t *Tenant) run(ctx context.Context, binary string) error {
	objs, err := seed.Objects(t.Seed)
	if err != nil {
		return err
	}
	t.Binary = binary
	t.Operator, err = t.World.RunWorkload(ctx, t.Deployment(objs), world.RunOptions{
		Binaries: map[string]string{seed.DefaultImage: binary},
	})
	return err
}

// RunOperator stops the operator and runs binary in its place, from the
// same seeded Deployment (the same pod name, so it takes the Lease back at
// once).
func (t *Tenant) RunOperator(ctx context.Context, binary string) error {
	if err := t.Operator.Stop(); err != nil {
		return err
	}
	return t.run(ctx, binary)
}

// Deployment picks the operator Deployment out of the seed.
func (t *Tenant) Deployment(objs []client.Object) client.Object {
	for _, o := range objs {
		if o.GetObjectKind().GroupVersionKind().Kind == "Deployment" {
			return o
		}
	}
	return nil
}

// Apply server-side applies obj as the test (field manager "e2e").
func Apply(ctx context.Context, c client.Client, obj client.Object) error {
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}

// ApplyBundle waits for the operator to have established the TenantBundle
// CRD, then applies b.
func (t *Tenant) ApplyBundle(ctx context.Context, b *tenantv1.TenantBundle) error {
	if err := t.WaitForCRDs(ctx); err != nil {
		return err
	}
	b = b.DeepCopy()
	b.TypeMeta = metav1.TypeMeta{APIVersion: tenantv1.GroupVersion.String(), Kind: "TenantBundle"}
	return untilKindKnown(ctx, func(ctx context.Context) error { return Apply(ctx, t.Client, b) })
}

// SeedBundle is ApplyBundle as the management side applies it
// (seed.ApplyBundle: field manager tenant-seeder, addon precedence).
func (t *Tenant) SeedBundle(ctx context.Context, b *tenantv1.TenantBundle) error {
	if err := t.WaitForCRDs(ctx); err != nil {
		return err
	}
	return untilKindKnown(ctx, func(ctx context.Context) error { return seed.ApplyBundle(ctx, t.Client, b) })
}

// untilKindKnown retries f while the client does not know the kind yet: its
// RESTMapper may have looked before the CRD existed, and rediscovers on the
// next miss.
func untilKindKnown(ctx context.Context, f func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = f(ctx)
		return !meta.IsNoMatchError(last), nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return last
}

// WaitForBundleKind is WaitForCRDs, then until this client's RESTMapper
// knows the TenantBundle kind: a request made afterwards spends nothing on
// the client's discovery, which a timed one must not count.
func (t *Tenant) WaitForBundleKind(ctx context.Context) error {
	if err := t.WaitForCRDs(ctx); err != nil {
		return err
	}
	return untilKindKnown(ctx, func(ctx context.Context) error {
		return t.Client.List(ctx, &tenantv1.TenantBundleList{}, client.Limit(1))
	})
}

// WaitForLeader waits until the operator holds its leader-election Lease:
// its manager has started, and its controllers start on the Lease.
func (t *Tenant) WaitForLeader(ctx context.Context) error {
	ns := t.Seed.Namespace
	if ns == "" {
		ns = seed.DefaultNamespace
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var lease coordinationv1.Lease
		if err := t.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: seed.LeaseName}, &lease); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "") != "", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the operator's Lease: %w", err)
	}
	return nil
}

// WaitForCRDs waits until the TenantBundle CRD is established (the seed
// creates it; the operator re-applies it at start).
func (t *Tenant) WaitForCRDs(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := t.Client.Get(ctx, client.ObjectKey{Name: "tenantbundles.tenant.cozystack.io"}, &crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the TenantBundle CRD: %w", err)
	}
	return nil
}

// Bundle reads the TenantBundle back.
func (t *Tenant) Bundle(ctx context.Context, name string) (*tenantv1.TenantBundle, error) {
	b := &tenantv1.TenantBundle{}
	return b, t.Client.Get(ctx, client.ObjectKey{Name: name}, b)
}

// PushCharts pushes the stand-in charts of ordinary Helm repositories
// (e2e/testdata/charts) to the world's registry under charts/ and returns
// the oci:// URL to mirror repositories onto.
func PushCharts(ctx context.Context, w *world.World, names ...string) (string, error) {
	root, err := world.RepoRoot()
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if _, err := packages.PushChart(ctx, w.RegistryHost, "charts", filepath.Join(root, "e2e", "testdata", "charts", n)); err != nil {
			return "", err
		}
	}
	return "oci://" + w.RegistryHost + "/charts", nil
}

// PushOpenStackCharts pushes cloud-provider-openstack's real charts
// (openstack-cloud-controller-manager and openstack-cinder-csi, from
// packages.OpenStackChartsDir) to the world's registry under charts/, the
// CCM with its Bitnami common dependency vendored as `helm dependency
// build` vendors it, and returns the oci:// URL to mirror their repository
// onto.
func PushOpenStackCharts(ctx context.Context, w *world.World) (string, error) {
	charts, err := packages.OpenStackChartsDir()
	if err != nil {
		return "", err
	}
	common, err := packages.BitnamiCommonDir()
	if err != nil {
		return "", err
	}
	occm, err := packages.WithDependencies(filepath.Join(charts, "openstack-cloud-controller-manager"), common)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(filepath.Dir(occm))
	for _, dir := range []string{occm, filepath.Join(charts, "cinder-csi-plugin")} {
		if _, err := packages.PushChart(ctx, w.RegistryHost, "charts", dir); err != nil {
			return "", err
		}
	}
	return "oci://" + w.RegistryHost + "/charts", nil
}

// TestdataDir returns <repo>/e2e/testdata/<sub>.
func TestdataDir(sub string) (string, error) {
	root, err := world.RepoRoot()
	return filepath.Join(root, "e2e", "testdata", sub), err
}

// CLI runs the kubectl-tenant binary as a tenant admin would, with the
// world's admin kubeconfig, and returns its combined output.
func (t *Tenant) CLI(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", t.World.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
