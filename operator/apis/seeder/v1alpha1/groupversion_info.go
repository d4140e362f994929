// Package v1alpha1 holds the seeder.tenant.cozystack.io API: the
// management side's record of a tenant, read by cmd/tenant-seeder. It lives
// in the management cluster only, so its CRD is not in the tenant's set.
// +kubebuilder:object:generate=true
// +groupName=seeder.tenant.cozystack.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	GroupVersion  = schema.GroupVersion{Group: "seeder.tenant.cozystack.io", Version: "v1alpha1"}
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	AddToScheme   = SchemeBuilder.AddToScheme
)
