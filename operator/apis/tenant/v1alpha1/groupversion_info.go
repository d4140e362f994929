// Package v1alpha1 holds the tenant.cozystack.io API: the TenantBundle that
// the management side seeds into every tenant cluster.
// +kubebuilder:object:generate=true
// +groupName=tenant.cozystack.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	GroupVersion  = schema.GroupVersion{Group: "tenant.cozystack.io", Version: "v1alpha1"}
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	AddToScheme   = SchemeBuilder.AddToScheme
)
