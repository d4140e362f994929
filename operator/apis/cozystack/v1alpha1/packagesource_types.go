package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageSourceRef points at the Flux source holding the packages tree.
type PackageSourceRef struct {
	// +kubebuilder:validation:Enum=GitRepository;OCIRepository
	Kind string `json:"kind"`
	Name string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Path is the base path inside the source; "/" means its root.
	// +optional
	Path string `json:"path,omitempty"`
}

// Library is a library chart vendored into components' charts/.
type Library struct {
	// +optional
	Name string `json:"name,omitempty"`
	Path string `json:"path"`
}

// ComponentInstall says how a component is installed; absent means the
// component is only published as a chart artifact.
type ComponentInstall struct {
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Privileged bool `json:"privileged,omitempty"`
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	// +optional
	UpgradeCRDs string `json:"upgradeCRDs,omitempty"`
	// +kubebuilder:validation:Enum=poller;legacy
	// +optional
	WaitStrategy string `json:"waitStrategy,omitempty"`
	// +optional
	HealthCheckExprs []CustomHealthCheck `json:"healthCheckExprs,omitempty"`
}

// CustomHealthCheck is a CEL readiness rule for rendered custom resources,
// with the field names of Flux's kustomize CustomHealthCheck.
type CustomHealthCheck struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// +optional
	Current string `json:"current,omitempty"`
	// +optional
	InProgress string `json:"inProgress,omitempty"`
	// +optional
	Failed string `json:"failed,omitempty"`
}

// Component is one chart of a variant.
type Component struct {
	Name string `json:"name"`
	// +optional
	Path string `json:"path,omitempty"`
	// +optional
	Libraries []string `json:"libraries,omitempty"`
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// +optional
	Install *ComponentInstall `json:"install,omitempty"`
}

// Variant is one named set of components.
type Variant struct {
	Name string `json:"name"`
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`
	// +optional
	Libraries []Library `json:"libraries,omitempty"`
	// +optional
	Components []Component `json:"components,omitempty"`
}

// PackageSourceSpec describes where a package's charts are and how its
// variants are built.
type PackageSourceSpec struct {
	// +optional
	SourceRef *PackageSourceRef `json:"sourceRef,omitempty"`
	// +optional
	Variants []Variant `json:"variants,omitempty"`
}

// PackageSourceStatus follows kstatus.
type PackageSourceStatus struct {
	// +optional
	Variants string `json:"variants,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PackageSource is a catalog entry.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=pks
// +kubebuilder:printcolumn:name="Variants",type=string,JSONPath=`.status.variants`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type PackageSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageSourceSpec   `json:"spec,omitempty"`
	Status PackageSourceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PackageSourceList is a list of PackageSources.
type PackageSourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageSource `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PackageSource{}, &PackageSourceList{})
}

// GetConditions returns the status conditions (for fluxcd/pkg/runtime/conditions).
func (in *PackageSource) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *PackageSource) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
