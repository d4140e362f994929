// Package privilege classifies a chart's rendered manifests as privileged
// or not, from what they would do in the cluster rather than from what the
// package says about itself. It denies by default: an object is unprivileged
// only if its kind is on an explicit list of namespaced kinds that act
// inside their own namespace, it stays in the release's namespace, and what
// it runs or grants passes the checks for its kind: pods the upstream
// baseline Pod Security Standard (k8s.io/pod-security-admission's policy
// package), RBAC what its rules grant. Everything else is a finding that a
// tenant admin has to confirm.
package privilege

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// podSpecPaths locate the pod template of each workload kind.
var podSpecPaths = map[schema.GroupKind][]string{
	{Kind: "Pod"}:                        {"spec"},
	{Kind: "ReplicationController"}:      {"spec", "template", "spec"},
	{Group: "apps", Kind: "Deployment"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:        {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:    {"spec", "jobTemplate", "spec", "template", "spec"},
}

// unprivilegedKinds act only inside their own namespace and need no check
// of their content. Workloads and RBAC are judged by what they run and
// grant; any kind not named here or there is a finding.
var unprivilegedKinds = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}:                                     true,
	{Kind: "Secret"}:                                        true,
	{Kind: "Service"}:                                       true,
	{Kind: "ServiceAccount"}:                                true,
	{Kind: "PersistentVolumeClaim"}:                         true,
	{Kind: "LimitRange"}:                                    true,
	{Kind: "ResourceQuota"}:                                 true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:          true,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: true,
	{Group: "networking.k8s.io", Kind: "Ingress"}:           true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:     true,
	{Group: "coordination.k8s.io", Kind: "Lease"}:           true,
}

// readVerbs are the verbs a cluster-wide rule may grant.
var readVerbs = []string{"get", "list", "watch"}

// escalatingVerbs let a role's holder grant or assume more than the role.
var escalatingVerbs = []string{"escalate", "bind", "impersonate"}

// escalationResources reach past what any role names, whatever the verb
// (a GET upgraded to a websocket runs commands): RBAC itself, other
// service accounts' tokens, commands in other pods, and the kubelet's and
// services' proxies.
var escalationResources = []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings",
	"serviceaccounts/token", "pods/exec", "pods/attach", "pods/portforward", "pods/ephemeralcontainers",
	"pods/proxy", "services/proxy", "nodes/proxy"}

// baseline is the Pod Security Standard every pod must pass.
var (
	evaluator, evaluatorErr = policy.NewEvaluator(policy.DefaultChecks(), nil)
	baseline                = psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.LatestVersion()}
)

// Result is what a rendering would do that needs a confirmation.
type Result struct {
	// Findings, one per privilege, sorted and without duplicates; none
	// means the rendering is not privileged.
	Findings []string
	// Pods says a pod template fails the baseline Pod Security Standard:
	// the namespace must allow privileged pods for it to run.
	Pods bool
	// BeyondNamespace says a finding is not about pods: the rendering
	// acts outside its namespace or beyond what a namespace admin may do,
	// so installing it needs more than namespace-scoped rights.
	BeyondNamespace bool
	// Reach lists the kinds of the objects behind those findings, sorted
	// and without duplicates: what an identity installing the rendering
	// needs rights on, beyond its namespace.
	Reach []schema.GroupKind
	// Defined maps the kinds the rendering's own CRDs define to their
	// resources, which no discovery knows before they are installed.
	Defined map[schema.GroupKind]Resource
	// Placed lists every object not placed in the release's namespace by
	// its manifest (no namespace, or another one): cluster-scoped objects
	// are among them, which installing needs rights on whether or not
	// they are findings.
	Placed []Object
	// Evidence digests every object that produced a finding, as rendered:
	// a confirmation vouches for them, so a change to any of them (an
	// image, a command, a host path, a rule) asks again.
	Evidence string
}

// Classify takes what Helm would apply, by file name as helm.Render gives
// it (templates, and the chart's crds/ files), for a release in namespace.
// Helm applies every rendered template but partials and NOTES.txt,
// whatever its extension, and flattens Lists; so does Classify.
func Classify(manifests map[string]string, namespace string) (Result, error) {
	if evaluatorErr != nil {
		return Result{}, evaluatorErr
	}
	names := make([]string, 0, len(manifests))
	for name := range manifests {
		if base := path.Base(name); base == "NOTES.txt" || strings.HasPrefix(base, "_") {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		decoded, err := decode(manifests[name])
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
		objs = append(objs, decoded...)
	}
	// A binding may refer to a role the same rendering defines.
	defined := map[string]bool{}
	for _, o := range objs {
		if o.GroupVersionKind().Group == rbacv1.GroupName {
			defined[o.GetKind()+"/"+o.GetName()] = true
		}
	}
	var out []string
	var evidence [][]byte
	pods, beyond := false, false
	var reach []schema.GroupKind
	var placed []Object
	crds := map[schema.GroupKind]Resource{}
	for _, obj := range objs {
		other, pod, err := classify(obj, namespace, defined)
		if err != nil {
			return Result{}, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		pods = pods || len(pod) > 0
		beyond = beyond || len(other) > 0
		if len(other) > 0 {
			reach = append(reach, obj.GroupVersionKind().GroupKind())
		}
		if gk, r, ok := definedKind(obj); ok {
			crds[gk] = r
		}
		if ns := obj.GetNamespace(); ns != namespace {
			o := Object{GroupKind: obj.GroupVersionKind().GroupKind(), Namespace: ns, Name: obj.GetName()}
			if o.GroupKind == clusterRoleKind {
				var role rbacv1.ClusterRole
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
					return Result{}, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
				}
				o.Rules = role.Rules
			}
			placed = append(placed, o)
		}
		if len(other)+len(pod) == 0 {
			continue
		}
		out = append(append(out, other...), pod...)
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return Result{}, err
		}
		evidence = append(evidence, raw)
	}
	sort.Strings(out)
	slices.SortFunc(reach, func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) })
	res := Result{Findings: slices.Compact(out), Pods: pods, BeyondNamespace: beyond, Reach: slices.Compact(reach), Defined: crds, Placed: placed}
	if len(evidence) > 0 {
		slices.SortFunc(evidence, bytes.Compare)
		sum := sha256.Sum256(bytes.Join(evidence, []byte{0}))
		res.Evidence = fmt.Sprintf("%x", sum)
	}
	return res, nil
}

// Fingerprint identifies findings (as Classify returns them) together with
// the evidence of the objects that produced them.
func Fingerprint(findings []string, evidence ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(findings, "\n") + "\x00" + strings.Join(evidence, "\n")))
	return fmt.Sprintf("sha256:%x", sum[:8])
}

// decode reads every document of a manifest, Lists flattened as Helm's
// resource builder flattens them.
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
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.IsList() {
			err := u.EachListItem(func(item runtime.Object) error {
				out = append(out, item.(*unstructured.Unstructured))
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, u)
	}
}

// classify returns the object's findings and whether a pod template among
// them fails the baseline standard.
func classify(obj *unstructured.Unstructured, namespace string, defined map[string]bool) (other, pod []string, err error) {
	gvk := obj.GroupVersionKind()
	gk := gvk.GroupKind()
	what := obj.GetKind() + " " + obj.GetName()
	if ns := obj.GetNamespace(); ns != "" && ns != namespace {
		other = append(other, fmt.Sprintf("%s: placed in namespace %s, outside the release's %s", what, ns, namespace))
	}
	if path, ok := podSpecPaths[gk]; ok {
		pod, err := podFindings(obj, path)
		return other, prefix(what, pod), err
	}
	switch {
	case unprivilegedKinds[gk]:
		return other, nil, nil
	case gk.Group == rbacv1.GroupName:
		rbac, err := rbacFindings(obj, namespace, defined)
		return append(other, prefix(what, rbac)...), nil, err
	}
	return append(other, fmt.Sprintf("%s: %s is not a kind known to act only inside its namespace", what, gk)), nil, nil
}

// podFindings are the baseline Pod Security Standard's objections to the
// pod template at path.
func podFindings(obj *unstructured.Unstructured, path []string) ([]string, error) {
	raw, found, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil || !found {
		return nil, err
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil, err
	}
	meta := &metav1.ObjectMeta{}
	if obj.GetKind() == "Pod" {
		meta.Annotations = obj.GetAnnotations()
	} else if m, ok, _ := unstructured.NestedMap(obj.Object, append(slices.Clone(path[:len(path)-1]), "metadata")...); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, meta); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, r := range evaluator.EvaluatePod(baseline, meta, &spec) {
		if r.Allowed {
			continue
		}
		f := r.ForbiddenReason
		if r.ForbiddenDetail != "" {
			f += " (" + r.ForbiddenDetail + ")"
		}
		out = append(out, f)
	}
	return out, nil
}

// rbacFindings judge RBAC by what it grants. Cluster-wide, only reading
// resources other than Secrets is unprivileged; in a namespace, anything
// but wildcards, the escalating verbs and the escalation resources. A
// binding is unprivileged only if it grants a role the same rendering
// defines (and so is judged here) to service accounts of the release's
// namespace.
func rbacFindings(obj *unstructured.Unstructured, namespace string, defined map[string]bool) ([]string, error) {
	switch obj.GetKind() {
	case "ClusterRole":
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
			return nil, err
		}
		var out []string
		if role.AggregationRule != nil {
			out = append(out, "aggregates the rules of other ClusterRoles")
		}
		for k, v := range role.Labels {
			if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") && v == "true" {
				out = append(out, "adds its rules to other ClusterRoles ("+k+")")
			}
		}
		return append(out, ruleFindings(role.Rules, true)...), nil
	case "Role":
		var role rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
			return nil, err
		}
		return ruleFindings(role.Rules, false), nil
	case "ClusterRoleBinding", "RoleBinding":
		var b rbacv1.RoleBinding // the two share their fields
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &b); err != nil {
			return nil, err
		}
		var out []string
		scope := "in its namespace"
		if obj.GetKind() == "ClusterRoleBinding" {
			scope = "cluster-wide"
		}
		if !defined[b.RoleRef.Kind+"/"+b.RoleRef.Name] {
			out = append(out, fmt.Sprintf("binds %s %s %s, which the chart does not define", b.RoleRef.Kind, b.RoleRef.Name, scope))
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || (s.Namespace != "" && s.Namespace != namespace) {
				out = append(out, fmt.Sprintf("grants to %s %s outside the release's service accounts", s.Kind, strings.TrimPrefix(s.Namespace+"/"+s.Name, "/")))
			}
		}
		return out, nil
	}
	return []string{"is an RBAC kind the gate does not know"}, nil
}

func ruleFindings(rules []rbacv1.PolicyRule, clusterWide bool) []string {
	var out []string
	for _, r := range rules {
		rule := fmt.Sprintf("(apiGroups %v, resources %v, verbs %v)", r.APIGroups, r.Resources, r.Verbs)
		if len(r.NonResourceURLs) > 0 && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" }) {
			out = append(out, fmt.Sprintf("grants %v on non-resource URLs %v", r.Verbs, r.NonResourceURLs))
		}
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			out = append(out, "grants a wildcard rule "+rule)
			continue
		}
		for _, v := range escalatingVerbs {
			if slices.Contains(r.Verbs, v) {
				out = append(out, fmt.Sprintf("grants %s on %v", v, r.Resources))
			}
		}
		readOnly := !slices.ContainsFunc(r.Verbs, func(v string) bool { return !slices.Contains(readVerbs, v) })
		switch {
		case slices.ContainsFunc(r.Resources, func(res string) bool { return slices.Contains(escalationResources, res) }):
			out = append(out, "grants access to RBAC, tokens, exec or proxies "+rule)
		case clusterWide && !readOnly:
			out = append(out, "grants writes cluster-wide "+rule)
		case clusterWide && slices.Contains(r.Resources, "secrets"):
			out = append(out, "reads Secrets cluster-wide "+rule)
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

// Object names one rendered object.
type Object struct {
	schema.GroupKind
	Namespace, Name string
	// Rules are a ClusterRole's.
	Rules []rbacv1.PolicyRule
}

// Resource is what the API calls a kind: its resource name and scope.
type Resource struct {
	Name       string
	Namespaced bool
}

// definedKind reads the kind a CustomResourceDefinition defines.
func definedKind(obj *unstructured.Unstructured) (schema.GroupKind, Resource, bool) {
	if obj.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
		return schema.GroupKind{}, Resource{}, false
	}
	group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
	scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
	if kind == "" || plural == "" {
		return schema.GroupKind{}, Resource{}, false
	}
	return schema.GroupKind{Group: group, Kind: kind}, Resource{Name: plural, Namespaced: scope != "Cluster"}, true
}

var clusterRoleKind = schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"}

// writeVerbs are those Helm and its wait use on an object.
var writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// Grants are the rules the identity that installs a rendering into
// namespace needs beyond the `admin` role it holds there, given the kinds
// behind its confirmed findings (reach), the objects it places outside the
// namespace, how the cluster names and scopes a kind (resolve; the
// rendering's own CRDs first), and whether a template calls lookup.
//
//   - A kind behind a confirmed finding: every verb Helm and its wait use,
//     on all objects of the kind (a kind nobody can name: its whole group);
//     for RBAC kinds also bind and escalate on roles, without which the API
//     server refuses a role or binding that grants more than its writer
//     holds.
//   - Any other object outside the namespace (the unprivileged
//     cluster-scoped ones: a read-only ClusterRole, a ClusterRoleBinding of
//     it to the app's own accounts): reads and create of its kind, and
//     update, patch and delete of it by name only (create cannot be limited
//     by name). Such a ClusterRole's own rules are granted too, which is
//     what lets the API server's escalation checks accept the role and a
//     binding of it, without bind or escalate: a role or binding granting
//     more than was judged is still refused.
//   - lookup: reads of everything, which is what lookup may read.
func Grants(namespace string, reach []schema.GroupKind, placed []Object, resolve func(schema.GroupKind) (Resource, bool), lookup bool) []rbacv1.PolicyRule {
	type key struct{ group, resource string }
	full := map[key]bool{}
	confirmed := map[schema.GroupKind]bool{}
	rbacKinds := false
	for _, gk := range reach {
		confirmed[gk] = true
		r, ok := resolve(gk)
		if !ok {
			r.Name = "*"
		}
		full[key{gk.Group, r.Name}] = true
		rbacKinds = rbacKinds || gk.Group == rbacv1.GroupName
	}
	named := map[key][]string{}
	var held []rbacv1.PolicyRule
	for _, o := range placed {
		r, ok := resolve(o.GroupKind)
		switch {
		case confirmed[o.GroupKind]:
			continue
		case !ok:
			// Only kinds on the gate's allow-list pass unconfirmed, and
			// the cluster serves all of those.
			continue
		case r.Namespaced && (o.Namespace == "" || o.Namespace == namespace):
			continue // in the namespace, where admin covers it
		}
		k := key{o.Group, r.Name}
		if full[k] {
			continue
		}
		named[k] = append(named[k], o.Name)
		for _, rule := range o.Rules {
			if !slices.ContainsFunc(held, func(x rbacv1.PolicyRule) bool { return reflect.DeepEqual(x, rule) }) {
				held = append(held, rule)
			}
		}
	}
	var out []rbacv1.PolicyRule
	for _, k := range sortedKeys(full, func(k key) string { return k.group + "/" + k.resource }) {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: writeVerbs})
	}
	for _, k := range sortedKeys(named, func(k key) string { return k.group + "/" + k.resource }) {
		names := slices.Compact(slices.Sorted(slices.Values(named[k])))
		out = append(out,
			rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: []string{"get", "list", "watch", "create"}},
			rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, ResourceNames: names, Verbs: []string{"update", "patch", "delete"}})
	}
	out = append(out, held...)
	if rbacKinds {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles", "roles"},
			Verbs: []string{"bind", "escalate"}})
	}
	if lookup {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}})
	}
	return out
}

func sortedKeys[K comparable, V any](m map[K]V, str func(K) string) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return strings.Compare(str(a), str(b)) })
	return keys
}
