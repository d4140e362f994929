// Package flux prepares the embedded Flux manifests for a tenant: the CRDs of
// the pinned controllers and the all-in-one hostNetwork pod that runs them.
package flux

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/manifests"
)

// Where Flux runs.
const (
	Namespace  = "cozy-fluxcd"
	Deployment = "flux"
)

// CRDs returns the Flux CRDs: the operator installs them before the addon
// tier's controllers start, so that HelmReleases and ExternalArtifacts can
// be watched and written before the Flux controllers run.
func CRDs() ([]*unstructured.Unstructured, error) {
	return apply.ReadStamped(manifests.Flux, "flux/crds/*.yaml")
}

// Objects returns the namespace, RBAC and the Deployment of Flux, with
// KUBERNETES_SERVICE_HOST/PORT set in every container of its hostNetwork
// pod: until a CNI replaces kube-proxy, the only way to the API server is
// the endpoint the operator itself was given.
func Objects(apiHost, apiPort string) ([]*unstructured.Unstructured, error) {
	objs, err := apply.ReadManifests(manifests.Flux, "flux/flux.yaml")
	if err != nil {
		return nil, err
	}
	if apiHost == "" || apiPort == "" {
		return objs, nil
	}
	for i, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			return nil, fmt.Errorf("flux manifests: %w", err)
		}
		if !d.Spec.Template.Spec.HostNetwork {
			continue
		}
		InjectAPIEndpoint(&d.Spec.Template.Spec, apiHost, apiPort)
		if objs[i], err = apply.ToUnstructured(d); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// InjectAPIEndpoint sets (or overwrites) the API endpoint env of every
// container of spec.
func InjectAPIEndpoint(spec *corev1.PodSpec, host, port string) {
	set := func(env []corev1.EnvVar, name, value string) []corev1.EnvVar {
		for i := range env {
			if env[i].Name == name {
				env[i] = corev1.EnvVar{Name: name, Value: value}
				return env
			}
		}
		return append(env, corev1.EnvVar{Name: name, Value: value})
	}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			list[i].Env = set(list[i].Env, "KUBERNETES_SERVICE_HOST", host)
			list[i].Env = set(list[i].Env, "KUBERNETES_SERVICE_PORT", port)
		}
	}
}
