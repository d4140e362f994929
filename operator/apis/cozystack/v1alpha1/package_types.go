package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageComponent toggles and tunes one component of a Package.
type PackageComponent struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// PackageSpec selects a variant of the same-named PackageSource.
type PackageSpec struct {
	// +optional
	Variant string `json:"variant,omitempty"`
	// +optional
	IgnoreDependencies []string `json:"ignoreDependencies,omitempty"`
	// +optional
	Components map[string]PackageComponent `json:"components,omitempty"`
	// ConfirmPrivileged confirms the privileges the operator found in this
	// Package's rendered charts, by the fingerprint it reports in
	// status.privileged. Not in Cozystack's schema: a tenant's catalog apps
	// are classified by what they render, whatever install.privileged
	// says, and a privileged one installs only once confirmed. A rendering
	// with other findings has another fingerprint, so it needs a new
	// confirmation.
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{16}$`
	// +optional
	ConfirmPrivileged string `json:"confirmPrivileged,omitempty"`
}

// PrivilegedStatus is what made a Package's rendering privileged.
type PrivilegedStatus struct {
	// Fingerprint identifies exactly these findings; spec.confirmPrivileged
	// must equal it for a catalog app to install.
	Fingerprint string `json:"fingerprint"`
	// Findings name the component, object and field, one per line.
	Findings []string `json:"findings"`
	// Confirmed says whether spec.confirmPrivileged matches the fingerprint.
	// +optional
	Confirmed bool `json:"confirmed,omitempty"`
}

// DependencyStatus records whether a package this one depends on is Ready.
type DependencyStatus struct {
	Ready bool `json:"ready"`
}

// PackageStatus follows kstatus.
type PackageStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	Dependencies map[string]DependencyStatus `json:"dependencies,omitempty"`
	// Privileged is set when the rendered charts are privileged (or a
	// component declares install.privileged).
	// +optional
	Privileged *PrivilegedStatus `json:"privileged,omitempty"`
	// LastHandledReconcileAt is the last reconcile.fluxcd.io/requestedAt
	// annotation value handled: a client that asked for a reconcile knows
	// the status is about the PackageSource and artifact as they are now,
	// which the generation alone does not tell.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// Package installs a variant of a PackageSource.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={pkg,pkgs}
// +kubebuilder:printcolumn:name="Variant",type=string,JSONPath=`.spec.variant`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Privileged",type=string,JSONPath=`.status.privileged.fingerprint`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type Package struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageSpec   `json:"spec,omitempty"`
	Status PackageStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PackageList is a list of Packages.
type PackageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Package `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Package{}, &PackageList{})
}

// GetConditions returns the status conditions (for fluxcd/pkg/runtime/conditions).
func (in *Package) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *Package) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
