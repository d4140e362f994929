package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// TenantBundleSpec is what the management side knows about a tenant cluster
// and what the tenant admins chose. The operator turns it into a working
// cluster: network tier first, then the variant, then the addons.
// +kubebuilder:validation:XValidation:rule="!has(self.packages.digest) || self.packages.digest.startsWith('sha256:')",message="spec.packages.digest must look like sha256:<hex>"
type TenantBundleSpec struct {
	// Bundle names the bundle definition embedded in the operator.
	// +kubebuilder:default=tenant
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Bundle string `json:"bundle,omitempty"`

	// Cluster holds the facts only the management side knows.
	Cluster ClusterFacts `json:"cluster"`

	// Platform says where the tenant sits on the Cozystack platform, for the
	// addons that talk to it (monitoring-agents, vertical-pod-autoscaler).
	// +optional
	Platform PlatformFacts `json:"platform,omitempty"`

	// Packages is where the charts come from.
	Packages PackagesSource `json:"packages"`

	// Variant selects the cloud integration: a variant name, or auto to
	// follow the backend of the node groups.
	// +kubebuilder:default=auto
	// +optional
	Variant string `json:"variant,omitempty"`

	// Cloud carries what the variant needs from the management side.
	// +optional
	Cloud CloudSpec `json:"cloud,omitempty"`

	// ChartMirrors maps the URL of a Helm repository that a variant names
	// (https:// or oci://) to a mirror, for air-gapped or private setups.
	// +optional
	ChartMirrors map[string]ChartMirror `json:"chartMirrors,omitempty"`

	// Addons switches optional addons on or off and tunes their values.
	// +optional
	Addons map[string]AddonSpec `json:"addons,omitempty"`

	// Catalog is the management side's say on the tenant's app catalog.
	// +optional
	Catalog CatalogSpec `json:"catalog,omitempty"`

	// Components holds per-component value overrides, merged last over
	// everything the operator computes, and never reverted by it.
	// +optional
	Components map[string]ComponentOverride `json:"components,omitempty"`

	// Suspend stops reconciliation; nothing is removed.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ClusterFacts are the tenant cluster's network facts.
// +kubebuilder:validation:XValidation:rule="!has(self.apiEndpoint) || self.apiEndpoint.matches('^[^:/]+:[0-9]{1,5}$')",message="spec.cluster.apiEndpoint must be host:port"
// +kubebuilder:validation:XValidation:rule="!has(self.serviceCIDR) || isCIDR(self.serviceCIDR)",message="spec.cluster.serviceCIDR must be a CIDR"
// +kubebuilder:validation:XValidation:rule="!has(self.podCIDR) || isCIDR(self.podCIDR)",message="spec.cluster.podCIDR must be a CIDR"
// +kubebuilder:validation:XValidation:rule="!has(self.dnsServiceIP) || isIP(self.dnsServiceIP)",message="spec.cluster.dnsServiceIP must be an IP address"
type ClusterFacts struct {
	// APIEndpoint is host:port of the API server as reachable from the nodes
	// before any CNI or kube-proxy runs (the ClusterIP is dead until then).
	// Optional in the schema so that a seed that forgot it still produces a
	// Stalled condition naming the field instead of a rejected object.
	// +optional
	APIEndpoint string `json:"apiEndpoint,omitempty"`

	// PodCIDR is the cluster pod network.
	// +kubebuilder:default="10.243.0.0/16"
	// +optional
	PodCIDR string `json:"podCIDR,omitempty"`

	// ServiceCIDR is the cluster service network.
	// +kubebuilder:default="10.95.0.0/16"
	// +optional
	ServiceCIDR string `json:"serviceCIDR,omitempty"`

	// DNSServiceIP is the ClusterIP of the cluster DNS Service; derived from
	// ServiceCIDR (its tenth address) when empty.
	// +optional
	DNSServiceIP string `json:"dnsServiceIP,omitempty"`

	// GatewayAPI turns the Gateway API on: its CRDs are installed before
	// Cilium, and Cilium serves Gateways with its Envoy (Cozystack's
	// addons.gatewayAPI).
	// +optional
	GatewayAPI bool `json:"gatewayAPI,omitempty"`

	// RootHost is the tenant's DNS name that catalog apps publish under;
	// charts read it as Cozystack's cluster value root-host.
	// +optional
	RootHost string `json:"rootHost,omitempty"`

	// ImagesRegistry is a registry mirror that charts route their images
	// through (Cozystack's cluster value images-registry; empty: each
	// image's own registry).
	// +optional
	ImagesRegistry string `json:"imagesRegistry,omitempty"`
}

// PlatformFacts are what the management side knows of the tenant's place
// on the platform: the names Cozystack's apps/kubernetes chart renders into
// the addons' values today.
type PlatformFacts struct {
	// ClusterName is the tenant cluster's name on the platform (the
	// kubernetes application's release name); addons label what they ship
	// to the platform with it.
	// +optional
	ClusterName string `json:"clusterName,omitempty"`

	// Namespace is the platform tenant's namespace the cluster belongs to.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// MonitoringNamespace is the namespace of the platform tenant whose
	// monitoring receives this cluster's metrics and logs.
	// +optional
	MonitoringNamespace string `json:"monitoringNamespace,omitempty"`

	// ClusterDomain is the platform's own cluster domain, under which its
	// monitoring Services are reached.
	// +kubebuilder:default=cozy.local
	// +optional
	ClusterDomain string `json:"clusterDomain,omitempty"`
}

// ClusterDomain is the tenant's cluster DNS domain. It is not a setting:
// Cozystack's tenant control planes (Kamaji networkProfile) and the CoreDNS
// Corefile of its coredns chart both use cluster.local.
const ClusterDomain = "cluster.local"

// PackagesSource names the Cozystack packages artifact: an OCI artifact in
// Flux's format holding a tar.gz of the packages/ tree.
// +kubebuilder:validation:XValidation:rule="has(self.tag) || has(self.digest)",message="spec.packages needs a tag or a digest"
type PackagesSource struct {
	// URL is oci://<registry>/<repository>.
	// +kubebuilder:validation:Pattern=`^oci://[^\s]+$`
	URL string `json:"url"`

	// Tag of the artifact.
	// +optional
	Tag string `json:"tag,omitempty"`

	// Digest pins the artifact; when set together with Tag, the tag must
	// resolve to it.
	// +optional
	Digest string `json:"digest,omitempty"`

	// PullSecretRef names a kubernetes.io/dockerconfigjson Secret.
	// +optional
	PullSecretRef *SecretReference `json:"pullSecretRef,omitempty"`

	// Insecure allows plain HTTP; never assumed.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// SecretReference names a Secret in a namespace.
type SecretReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// CloudSpec is the variant's input.
type CloudSpec struct {
	// StorageClasses to create in the tenant, by name, each backed by a
	// storage class of the infrastructure cluster (KubeVirt).
	// +optional
	StorageClasses map[string]StorageClass `json:"storageClasses,omitempty"`

	// CredentialsSecretRef names a tenant-owned Secret holding cloud
	// credentials (an OpenStack application credential as cloud.conf). The
	// operator passes only its name to the charts that mount it: the
	// content is never read, copied, logged or reported.
	// +optional
	CredentialsSecretRef *SecretReference `json:"credentialsSecretRef,omitempty"`
}

// StorageClass maps a tenant storage class onto an infrastructure one.
type StorageClass struct {
	InfraStorageClass string `json:"infraStorageClass"`
	// +optional
	Default bool `json:"default,omitempty"`
}

// ChartMirror replaces a Helm repository URL.
type ChartMirror struct {
	// +kubebuilder:validation:Pattern=`^(oci|https?)://[^\s]+$`
	URL string `json:"url"`
	// Insecure allows plain HTTP to the mirror.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// AddonSpec toggles one addon.
type AddonSpec struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// PrivilegedAppsPolicy says what happens to a catalog app whose rendering
// is privileged.
// +kubebuilder:validation:Enum=RequireConfirmation;Forbidden
type PrivilegedAppsPolicy string

const (
	// PrivilegedAppsRequireConfirmation installs a privileged catalog app
	// once a tenant admin confirms its findings on the Package.
	PrivilegedAppsRequireConfirmation PrivilegedAppsPolicy = "RequireConfirmation"
	// PrivilegedAppsForbidden refuses privileged catalog apps, confirmed
	// or not.
	PrivilegedAppsForbidden PrivilegedAppsPolicy = "Forbidden"
)

// CatalogSpec registers catalog PackageSources and sets the policy for
// privileged apps.
type CatalogSpec struct {
	// PrivilegedApps is RequireConfirmation (the default) or Forbidden.
	// +kubebuilder:default=RequireConfirmation
	// +optional
	PrivilegedApps PrivilegedAppsPolicy `json:"privilegedApps,omitempty"`

	// Sources become cluster-scoped PackageSources of the same names, the
	// way Cozystack's platform chart writes its sources. A tenant admin may
	// add PackageSources of their own beside them.
	// +listType=map
	// +listMapKey=name
	// +optional
	Sources []CatalogSource `json:"sources,omitempty"`
}

// CatalogSource is one catalog PackageSource.
type CatalogSource struct {
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// SourceRef defaults to the packages artifact of spec.packages.
	// +optional
	SourceRef *cozyv1.PackageSourceRef `json:"sourceRef,omitempty"`
	// +kubebuilder:validation:MinItems=1
	Variants []cozyv1.Variant `json:"variants"`
}

// ComponentOverride holds the values a tenant admin or the management side
// wants on top of the operator's own for one component.
type ComponentOverride struct {
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// ComponentStatus is what the operator observed of one component.
type ComponentStatus struct {
	Name string `json:"name"`
	Tier string `json:"tier"`
	// +optional
	Chart string `json:"chart,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Revision int  `json:"revision,omitempty"`
	Ready    bool `json:"ready"`
	// +optional
	Message string `json:"message,omitempty"`
}

// TenantBundleStatus follows kstatus.
type TenantBundleStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastHandledReconcileAt is the value of the
	// reconcile.fluxcd.io/requestedAt annotation last handled, so a client
	// that asked for a reconcile can tell when it happened.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// Variant is the variant resolved for this cluster. Once components of a
	// variant are installed it is kept: a change of backend is refused.
	// +optional
	Variant string `json:"variant,omitempty"`
	// ArtifactDigest is the digest of the packages artifact in use.
	// +optional
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	// Components lists each component of the bundle.
	// +optional
	Components []ComponentStatus `json:"components,omitempty"`
}

// TenantBundle is the one object per tenant cluster that describes it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tb
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="name must be at most 63 characters"
// +kubebuilder:printcolumn:name="Variant",type=string,JSONPath=`.status.variant`
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkReady")].status`
// +kubebuilder:printcolumn:name="Cloud",type=string,JSONPath=`.status.conditions[?(@.type=="CloudReady")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TenantBundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantBundleSpec   `json:"spec,omitempty"`
	Status TenantBundleStatus `json:"status,omitempty"`
}

// GetConditions lets fluxcd/pkg/runtime/conditions read the conditions.
func (in *TenantBundle) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions lets fluxcd/pkg/runtime/conditions write the conditions.
func (in *TenantBundle) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// TenantBundleList is a list of TenantBundles.
type TenantBundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantBundle `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantBundle{}, &TenantBundleList{})
}
