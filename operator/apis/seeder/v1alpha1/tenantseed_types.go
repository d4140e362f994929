package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// OperatorSpec picks the operator build seeded into the tenant.
type OperatorSpec struct {
	// +optional
	Image string `json:"image,omitempty"`
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`
}

// TenantSeedSpec is what the management side knows about one tenant and
// wants in it. It sits next to the Kamaji TenantControlPlane it belongs to,
// written by the platform from the same values that render the control
// plane, so there is one typed, validated place for the per-tenant
// settings instead of stringly annotations on an object Kamaji owns.
type TenantSeedSpec struct {
	// TenantControlPlane names the Kamaji TenantControlPlane in this
	// namespace; default: the TenantSeed's own name.
	// +optional
	TenantControlPlane string `json:"tenantControlPlane,omitempty"`

	// KubeconfigSecretKey is the key of <tcp>-admin-kubeconfig to use.
	// +kubebuilder:default=super-admin.svc
	// +optional
	KubeconfigSecretKey string `json:"kubeconfigSecretKey,omitempty"`

	Operator OperatorSpec `json:"operator"`

	// Bundle is the spec of the tenant's TenantBundle "tenant": endpoint,
	// CIDRs, variant, storage classes, packages source and the management
	// side's addon choices. Tenant admins' later addon toggles win over an
	// unchanged value here (see docs/addons.md).
	Bundle tenantv1.TenantBundleSpec `json:"bundle"`

	// Suspend stops seeding and status reads; nothing is removed.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// TenantSeedStatus says what was seeded and mirrors what the tenant reports.
type TenantSeedStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready mirrors the tenant's TenantBundle Ready; Seeded and
	// TenantReachable say how the seeding went.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastSeedTime is when the seed was last applied.
	// +optional
	LastSeedTime *metav1.Time `json:"lastSeedTime,omitempty"`
	// SeededVersion is the operator version last applied to the tenant.
	// +optional
	SeededVersion string `json:"seededVersion,omitempty"`
	// TenantConditions are the tenant's TenantBundle conditions as last read.
	// +optional
	TenantConditions []metav1.Condition `json:"tenantConditions,omitempty"`
	// TenantGeneration is the TenantBundle's generation when TenantConditions
	// were read; a condition of an older generation is about an older spec.
	// +optional
	TenantGeneration int64 `json:"tenantGeneration,omitempty"`
	// LastReadTime is when the tenant's status was last read.
	// +optional
	LastReadTime *metav1.Time `json:"lastReadTime,omitempty"`
}

// TenantSeed seeds one tenant cluster and reads its status back.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tseed
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.seededVersion`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type TenantSeed struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantSeedSpec   `json:"spec,omitempty"`
	Status TenantSeedStatus `json:"status,omitempty"`
}

// GetConditions lets fluxcd/pkg/runtime/conditions read the conditions.
func (in *TenantSeed) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions lets fluxcd/pkg/runtime/conditions write the conditions.
func (in *TenantSeed) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// TenantSeedList is a list of TenantSeeds.
type TenantSeedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantSeed `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantSeed{}, &TenantSeedList{})
}
