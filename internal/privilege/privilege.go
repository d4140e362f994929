// Package privilege classifies a chart's rendered manifests as privileged
// or not, from what they would do in the cluster rather than from what the
// package says about itself: pods that share the node's namespaces, mount
// its filesystem, run privileged or add capabilities, and cluster-wide RBAC
// that grants everything or lets its holder grant itself more.
package privilege

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// unprivilegedCapabilities are the capabilities a container may add under
// the restricted Pod Security Standard.
var unprivilegedCapabilities = []corev1.Capability{"NET_BIND_SERVICE"}

// escalatingVerbs let a role's holder grant or assume more than the role.
var escalatingVerbs = []string{"escalate", "bind", "impersonate"}

// podSpecPaths locate the pod template of each workload kind.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// Classify takes manifests by template name, as Helm renders them, and
// returns one finding per privilege they grant, sorted
// and without duplicates; none means the rendering is not privileged.
func Classify(manifests map[string]string) ([]string, error) {
	names := make([]string, 0, len(manifests))
	for name := range manifests {
		// Helm renders notes and partials too; only manifests create objects.
		if ext := path.Ext(name); ext == ".yaml" || ext == ".yml" || ext == ".json" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		objs, err := decode(manifests[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, obj := range objs {
			found, err := classify(obj)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", name, obj.GetKind(), obj.GetName(), err)
			}
			out = append(out, found...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// Fingerprint identifies a set of findings (as Classify returns them).
func Fingerprint(findings []string) string {
	sum := sha256.Sum256([]byte(strings.Join(findings, "\n")))
	return fmt.Sprintf("sha256:%x", sum[:8])
}

func decode(manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

func classify(obj *unstructured.Unstructured) ([]string, error) {
	what := obj.GetKind() + " " + obj.GetName()
	if path, ok := podSpecPaths[obj.GetKind()]; ok {
		raw, found, err := unstructured.NestedMap(obj.Object, path...)
		if err != nil || !found {
			return nil, err
		}
		var spec corev1.PodSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
			return nil, err
		}
		return prefix(what, podFindings(&spec)), nil
	}
	switch obj.GetKind() {
	case "ClusterRole":
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
			return nil, err
		}
		return prefix(what, ruleFindings(role.Rules)), nil
	case "ClusterRoleBinding":
		var b rbacv1.ClusterRoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &b); err != nil {
			return nil, err
		}
		if b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "cluster-admin" {
			return []string{what + ": binds cluster-admin"}, nil
		}
	}
	return nil, nil
}

func podFindings(spec *corev1.PodSpec) []string {
	var out []string
	for flag, on := range map[string]bool{"hostNetwork": spec.HostNetwork, "hostPID": spec.HostPID, "hostIPC": spec.HostIPC} {
		if on {
			out = append(out, flag)
		}
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			out = append(out, fmt.Sprintf("hostPath volume %s (%s)", v.Name, v.HostPath.Path))
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, e := range spec.EphemeralContainers {
		containers = append(containers, corev1.Container(e.EphemeralContainerCommon))
	}
	for _, c := range containers {
		out = append(out, containerFindings(&c)...)
	}
	return out
}

func containerFindings(c *corev1.Container) []string {
	var out []string
	if sc := c.SecurityContext; sc != nil {
		if sc.Privileged != nil && *sc.Privileged {
			out = append(out, "container "+c.Name+" is privileged")
		}
		if sc.Capabilities != nil {
			var added []string
			for _, capability := range sc.Capabilities.Add {
				if !slices.Contains(unprivilegedCapabilities, capability) {
					added = append(added, string(capability))
				}
			}
			if len(added) > 0 {
				sort.Strings(added)
				out = append(out, fmt.Sprintf("container %s adds capabilities %s", c.Name, strings.Join(added, ",")))
			}
		}
	}
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			out = append(out, fmt.Sprintf("container %s uses hostPort %d", c.Name, p.HostPort))
		}
	}
	return out
}

func ruleFindings(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			out = append(out, fmt.Sprintf("grants a wildcard rule (apiGroups %v, resources %v, verbs %v)", r.APIGroups, r.Resources, r.Verbs))
		}
		for _, v := range escalatingVerbs {
			if slices.Contains(r.Verbs, v) {
				out = append(out, fmt.Sprintf("grants %s on %v", v, r.Resources))
			}
		}
	}
	return out
}

func prefix(what string, findings []string) []string {
	for i, f := range findings {
		findings[i] = what + ": " + f
	}
	return findings
}
