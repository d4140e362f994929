package flux

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestObjectsInjectTheAPIEndpoint(t *testing.T) {
	objs, err := Objects("10.0.0.1", "6443")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
		if u.GetKind() != "Deployment" {
			continue
		}
		if _, found := u.Object["status"]; found {
			t.Error("the applied Deployment carries a status")
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			t.Fatal(err)
		}
		spec := d.Spec.Template.Spec
		if !spec.HostNetwork || spec.PriorityClassName != "system-cluster-critical" {
			t.Errorf("hostNetwork=%v priorityClassName=%q", spec.HostNetwork, spec.PriorityClassName)
		}
		if len(spec.Containers) != 2 {
			t.Fatalf("%d containers, want source-controller and helm-controller", len(spec.Containers))
		}
		for _, c := range spec.Containers {
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env["KUBERNETES_SERVICE_HOST"] != "10.0.0.1" || env["KUBERNETES_SERVICE_PORT"] != "6443" {
				t.Errorf("container %s env = %v", c.Name, env)
			}
		}
	}
	if kinds["Deployment"] != 1 || kinds["Namespace"] != 1 {
		t.Errorf("kinds = %v", kinds)
	}
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range crds {
		names[c.GetName()] = true
	}
	for _, want := range []string{"helmreleases.helm.toolkit.fluxcd.io", "externalartifacts.source.toolkit.fluxcd.io", "ocirepositories.source.toolkit.fluxcd.io"} {
		if !names[want] {
			t.Errorf("CRD %s missing", want)
		}
	}
}
