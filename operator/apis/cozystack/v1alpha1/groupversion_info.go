// Package v1alpha1 holds the catalog kinds of cozystack.io/v1alpha1
// (PackageSource, Package), schema-compatible with Cozystack's own so that
// objects written for the platform are accepted unchanged in a tenant.
// +kubebuilder:object:generate=true
// +groupName=cozystack.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	GroupVersion  = schema.GroupVersion{Group: "cozystack.io", Version: "v1alpha1"}
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	AddToScheme   = SchemeBuilder.AddToScheme
)
