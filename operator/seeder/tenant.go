package seeder

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/seed"
	seederv1 "github.com/cozystack/tenant-operator/operator/apis/seeder/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// TenantControlPlaneGVK is Kamaji's control plane kind.
var TenantControlPlaneGVK = schema.GroupVersionKind{Group: "kamaji.clastix.io", Version: "v1alpha1", Kind: "TenantControlPlane"}

// tenantAccess is how the seeder reaches a tenant.
type tenantAccess struct {
	client.Client
	secretName, key string
}

// tenant returns a client of the tenant when its control plane is Ready and
// its admin kubeconfig exists; nil (and a condition saying why) otherwise.
// The watches on TenantControlPlanes and Secrets bring the next attempt.
func (r *Reconciler) tenant(ctx context.Context, ts *seederv1.TenantSeed) (*tenantAccess, error) {
	name := ts.Spec.TenantControlPlane
	if name == "" {
		name = ts.Name
	}
	tcp := &unstructured.Unstructured{}
	tcp.SetGroupVersionKind(TenantControlPlaneGVK)
	if err := r.Get(ctx, client.ObjectKey{Namespace: ts.Namespace, Name: name}, tcp); err != nil {
		if apierrors.IsNotFound(err) {
			conditions.MarkFalse(ts, SeededCondition, ReasonControlPlaneNotFound, "TenantControlPlane %s not found: nothing to seed", name)
			return nil, nil
		}
		return nil, outcome.Retry(ReasonControlPlaneNotFound, err)
	}
	if st, _, _ := unstructured.NestedString(tcp.Object, "status", "kubernetesResources", "version", "status"); st != "Ready" {
		conditions.MarkFalse(ts, SeededCondition, ReasonControlPlaneNotReady, "TenantControlPlane %s is %q, not Ready", name, st)
		return nil, nil
	}
	secretName, _, _ := unstructured.NestedString(tcp.Object, "status", "kubeconfig", "admin", "secretName")
	if secretName == "" {
		secretName = name + "-admin-kubeconfig"
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ts.Namespace, Name: secretName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			conditions.MarkFalse(ts, SeededCondition, ReasonKubeconfigMissing, "Secret %s not found", secretName)
			return nil, nil
		}
		return nil, outcome.Retry(ReasonKubeconfigMissing, err)
	}
	key := ts.Spec.KubeconfigSecretKey
	if key == "" {
		key = "super-admin.svc"
	}
	raw, ok := secret.Data[key]
	if !ok {
		conditions.MarkFalse(ts, SeededCondition, ReasonKubeconfigMissing, "Secret %s has no key %s", secretName, key)
		return nil, nil
	}
	c, err := r.Tenants.For(secret, raw)
	if err != nil {
		return nil, outcome.Terminal(ReasonKubeconfigMissing, "Secret %s key %s: %v", secretName, key, err)
	}
	return &tenantAccess{Client: c, secretName: secretName, key: key}, nil
}

// TenantClients caches one client per admin kubeconfig Secret, rebuilt when
// the Secret changes, so discovery is not repeated on every status read.
type TenantClients struct {
	Scheme *runtime.Scheme

	mu      sync.Mutex
	clients map[types.UID]tenantClient
}

type tenantClient struct {
	version string // the Secret's resourceVersion the client was built from
	client.Client
}

// For returns the client of the kubeconfig in secret (raw).
func (t *TenantClients) For(secret *corev1.Secret, raw []byte) (client.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc, ok := t.clients[secret.UID]; ok && tc.version == secret.ResourceVersion {
		return tc.Client, nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, err
	}
	// A dead tenant must not stall a worker for long.
	cfg.Timeout = defaultTenantTimeout
	c, err := client.New(cfg, client.Options{Scheme: t.Scheme})
	if err != nil {
		return nil, err
	}
	if t.clients == nil {
		t.clients = map[types.UID]tenantClient{}
	}
	t.clients[secret.UID] = tenantClient{version: secret.ResourceVersion, Client: c}
	return c, nil
}

// seedConfig is the seed for a TenantSeed: the operator reaches the API
// server at the endpoint of the bundle's cluster facts, which is the one
// reachable from the tenant's nodes before any CNI.
func seedConfig(ts *seederv1.TenantSeed) (seed.Config, error) {
	host, port, err := net.SplitHostPort(ts.Spec.Bundle.Cluster.APIEndpoint)
	if err != nil {
		return seed.Config{}, fmt.Errorf("spec.bundle.cluster.apiEndpoint: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return seed.Config{}, fmt.Errorf("spec.bundle.cluster.apiEndpoint: %w", err)
	}
	b := &tenantv1.TenantBundle{Spec: *ts.Spec.Bundle.DeepCopy()}
	b.Name = seed.BundleName
	return seed.Config{Image: ts.Spec.Operator.Image, Version: ts.Spec.Operator.Version, APIHost: host, APIPort: p, Bundle: b}, nil
}
