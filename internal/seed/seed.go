// Package seed renders what the management side puts into a tenant cluster,
// from one typed Config: no string templating of YAML. The same objects are
// applied by the seeder, printed by `kubectl tenant seed --dry-run`, and run
// by the test world's process runner, so what is tested is what ships.
package seed

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/manifests"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// Defaults.
const (
	DefaultNamespace = "cozy-tenant-operator"
	DefaultImage     = "ghcr.io/cozystack/tenant-operator"
	Name             = "tenant-operator"
	// LeaseName is the operator's leader-election Lease, in its namespace.
	LeaseName = Name + ".tenant.cozystack.io"
	// ArtifactPort serves the chart artifacts of addons to helm-controller.
	ArtifactPort = 9795
)

// Config is everything the seed needs.
type Config struct {
	Namespace string
	Image     string // repository
	Version   string // tag
	// APIHost/APIPort: the API server as reachable from nodes before any
	// CNI runs; becomes KUBERNETES_SERVICE_HOST/PORT of the operator.
	APIHost string
	APIPort int
	// Bundle is the TenantBundle to create, if any.
	Bundle *tenantv1.TenantBundle
	// ExtraArgs are appended to the operator's arguments.
	ExtraArgs []string
	// CRDWait bounds how long Apply waits for the API server to serve the
	// TenantBundle kind once its CRD is established (default 5m).
	CRDWait time.Duration
}

func (c Config) crdWait() time.Duration {
	if c.CRDWait == 0 {
		return 5 * time.Minute
	}
	return c.CRDWait
}

func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.Version == "" {
		c.Version = "latest"
	}
	return c
}

// Objects returns the seed in apply order: the operator's CRDs (create-only,
// see CRDs), then the namespace, RBAC and Deployment, then the TenantBundle.
func Objects(cfg Config) ([]client.Object, error) {
	cfg = cfg.withDefaults()
	if cfg.APIHost == "" || cfg.APIPort == 0 {
		return nil, fmt.Errorf("seed: the API endpoint reachable from nodes is required")
	}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": Name, "app.kubernetes.io/part-of": "cozystack"}
	objs := append(crds, []client.Object{
		&corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace, Labels: map[string]string{
				// hostNetwork pods are refused by every pod-security level
				// below privileged.
				"pod-security.kubernetes.io/enforce": "privileged",
			}},
		},
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: cfg.Namespace, Labels: labels},
		},
		clusterRole(labels),
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: Name, Namespace: cfg.Namespace}},
		},
		deployment(cfg, labels),
	}...)
	if cfg.Bundle != nil {
		b := cfg.Bundle.DeepCopy()
		b.TypeMeta = metav1.TypeMeta{APIVersion: tenantv1.GroupVersion.String(), Kind: "TenantBundle"}
		objs = append(objs, b)
	}
	return objs, nil
}

// CRDs are the operator's CRDs as the seed carries them, marked create-only
// (apply.CreateOnlyAnnotation). The seed creates them so that the TenantBundle
// is applied in the same pass, not after the operator's pod has been
// scheduled, pulled and started: the operator then finds its work waiting,
// and the management side never waits on the tenant's nodes. The operator
// still applies its own CRDs at every start, so they follow its version, and
// the seed never patches them after creating them.
func CRDs() ([]client.Object, error) {
	// Stamped as the operator stamps them: the operator's first start finds
	// them current and spends no apply on them.
	us, err := apply.ReadStamped(manifests.CRDs, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(us))
	for _, u := range us {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[apply.CreateOnlyAnnotation] = apply.CreateOnly
		u.SetAnnotations(ann)
		objs = append(objs, u)
	}
	return objs, nil
}

// clusterRole grants what installing arbitrary system charts takes. Helm
// creates whatever kinds the charts hold (CRDs, ClusterRoles, webhooks,
// DaemonSets in kube-system), and Kubernetes only lets a subject create a
// ClusterRole with rights it holds itself; so the operator needs every
// right the charts grant. Stated as rules rather than a binding to
// cluster-admin so that the grant is visible and auditable in one place.
func clusterRole(labels map[string]string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
		},
	}
}

// Tolerations of every early pod: a fresh worker carries all of these taints
// until the CNI, the cloud controller and the kubelet say otherwise.
var Tolerations = []corev1.Toleration{
	{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists},
	{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists},
	{Key: "node.kubernetes.io/network-unavailable", Operator: corev1.TolerationOpExists},
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Operator: corev1.TolerationOpExists},
	{Key: "node.cilium.io/agent-not-ready", Operator: corev1.TolerationOpExists},
	{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
}

func deployment(cfg Config, labels map[string]string) *appsv1.Deployment {
	args := append([]string{"--leader-elect=true", "--cache-dir=/var/cache/tenant-operator",
		// Flux's pod may run on another node; both are on the host
		// network, so the node's address reaches the chart server.
		"--artifact-bind-address=$(HOST_IP):" + strconv.Itoa(ArtifactPort)}, cfg.ExtraArgs...)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: cfg.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": Name}},
			// Recreate: a surge pod on the host network could collide with
			// the old one on an opt-in port and stall the rollout forever.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: Name,
					HostNetwork:        true,
					// The node resolver: cluster DNS does not exist yet.
					DNSPolicy:         corev1.DNSDefault,
					PriorityClassName: "system-cluster-critical",
					Tolerations:       Tolerations,
					Containers: []corev1.Container{{
						Name:  "operator",
						Image: cfg.Image + ":" + cfg.Version,
						Args:  args,
						Env: []corev1.EnvVar{
							// The ClusterIP of kubernetes.default is dead
							// until the CNI replaces kube-proxy.
							{Name: "KUBERNETES_SERVICE_HOST", Value: cfg.APIHost},
							{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(cfg.APIPort)},
							// A soft heap limit: the Go runtime collects and
							// returns memory to stay near it, so the idle
							// footprint stays small after the bursts of a
							// bootstrap (rendering charts).
							{Name: "GOMEMLIMIT", Value: "40MiB"},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/var/cache/tenant-operator"}},
					}},
					Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}
