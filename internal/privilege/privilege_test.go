package privilege

import (
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const ns = "app"

// One chart per class of privilege a catalog app can take, each written
// the way a chart author would, and the findings the gate must report.
// want lists substrings of findings; each must match one.
func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{name: "a plain app is not privileged", files: map[string]string{"app/templates/app.yaml": `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  template:
    spec:
      serviceAccountName: web
      containers:
      - name: web
        image: web:1
        securityContext: {capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}}
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: web}
rules: [{apiGroups: [""], resources: [configmaps, secrets], verbs: [get, list, watch, create, update]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: web}
subjects: [{kind: ServiceAccount, name: web, namespace: app}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: web-reader}
rules: [{apiGroups: [""], resources: [nodes, pods], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: web-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: web-reader}
subjects: [{kind: ServiceAccount, name: web, namespace: app}]
`}},
		{name: "host namespaces and ports", files: map[string]string{"app/templates/ds.yaml": `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ingress}
spec:
  template:
    spec:
      hostNetwork: true
      containers: [{name: controller, ports: [{containerPort: 443, hostPort: 443}]}]
`}, want: []string{"DaemonSet ingress: host namespaces (hostNetwork=true)", "DaemonSet ingress: hostPort (container \"controller\" uses hostPort 443)"}},
		{name: "a template without a manifest extension is applied too", files: map[string]string{"app/templates/agent.tpl.txt": `
apiVersion: v1
kind: Pod
metadata: {name: agent}
spec:
  volumes: [{name: root, hostPath: {path: /}}]
  containers: [{name: a}]
`}, want: []string{"Pod agent: hostPath volumes"}},
		{name: "a List is flattened", files: map[string]string{"app/templates/list.yaml": `
apiVersion: v1
kind: List
items:
- apiVersion: batch/v1
  kind: CronJob
  metadata: {name: scan}
  spec:
    jobTemplate:
      spec:
        template:
          spec:
            hostPID: true
            containers: [{name: scan}]
`}, want: []string{"CronJob scan: host namespaces (hostPID=true)"}},
		{name: "objects of crds/ are applied (and replaced) too", files: map[string]string{"app/crds/crd.yaml": `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ingresses.networking.k8s.io}
`}, want: []string{"CustomResourceDefinition ingresses.networking.k8s.io: CustomResourceDefinition.apiextensions.k8s.io is not a kind known"}},
		{name: "pod fields the baseline standard forbids", files: map[string]string{"app/templates/pod.yaml": `
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  securityContext:
    seccompProfile: {type: Unconfined}
    sysctls: [{name: kernel.core_pattern, value: x}]
    seLinuxOptions: {type: spc_t}
  initContainers: [{name: init, securityContext: {privileged: true}}]
  containers:
  - name: main
    securityContext:
      capabilities: {add: [SYS_ADMIN]}
      procMount: Unmasked
      appArmorProfile: {type: Unconfined}
`}, want: []string{"Pod p: privileged (container \"init\"", "Pod p: non-default capabilities", "Pod p: seccompProfile",
			"Pod p: forbidden sysctls", "Pod p: seLinuxOptions", "Pod p: procMount", "Pod p: forbidden AppArmor profile"}},
		{name: "a Windows host process", files: map[string]string{"app/templates/win.yaml": `
apiVersion: apps/v1
kind: Deployment
metadata: {name: w}
spec:
  template:
    spec:
      securityContext: {windowsOptions: {hostProcess: true}}
      hostNetwork: true
      containers: [{name: w}]
`}, want: []string{"Deployment w: hostProcess", "Deployment w: host namespaces"}},
		{name: "Flux and Cozystack objects install more charts", files: map[string]string{"app/templates/flux.yaml": `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: more}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: more}
---
apiVersion: cozystack.io/v1alpha1
kind: Package
metadata: {name: more}
---
apiVersion: cozystack.io/v1alpha1
kind: PackageSource
metadata: {name: more}
`}, want: []string{"HelmRelease more: HelmRelease.helm.toolkit.fluxcd.io", "OCIRepository more:", "Package more:", "PackageSource more:"}},
		{name: "storage on the host", files: map[string]string{"app/templates/pv.yaml": `
apiVersion: v1
kind: PersistentVolume
metadata: {name: root}
spec: {hostPath: {path: /}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: disk}
spec: {local: {path: /dev/sda}}
`}, want: []string{"PersistentVolume root:", "PersistentVolume disk:"}},
		{name: "admission and aggregated APIs", files: map[string]string{"app/templates/hooks.yaml": `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: m}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: v}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.example.com}
`}, want: []string{"MutatingWebhookConfiguration m:", "ValidatingAdmissionPolicy v:", "APIService v1.example.com:"}},
		{name: "bindings to roles the chart does not define", files: map[string]string{"app/templates/rbac.yaml": `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: ServiceAccount, name: sa, namespace: app}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: node}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node"}
subjects: [{kind: ServiceAccount, name: sa, namespace: app}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: ServiceAccount, name: sa}]
`}, want: []string{"ClusterRoleBinding a: binds ClusterRole admin cluster-wide", "ClusterRoleBinding node: binds ClusterRole system:node",
			"RoleBinding e: binds ClusterRole edit in its namespace"}},
		{name: "grants to others than the release's service accounts", files: map[string]string{"app/templates/rbac.yaml": `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: r}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects: [{kind: Group, name: "system:authenticated"}, {kind: ServiceAccount, name: sa, namespace: kube-system}]
`}, want: []string{"RoleBinding r: grants to Group system:authenticated", "RoleBinding r: grants to ServiceAccount kube-system/sa"}},
		{name: "aggregated ClusterRoles", files: map[string]string{"app/templates/rbac.yaml": `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: into-admin
  labels: {rbac.authorization.k8s.io/aggregate-to-admin: "true"}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: collector}
aggregationRule: {clusterRoleSelectors: [{matchLabels: {x: "y"}}]}
`}, want: []string{"ClusterRole into-admin: adds its rules to other ClusterRoles", "ClusterRole collector: aggregates the rules"}},
		{name: "rules as strong as a wildcard without one", files: map[string]string{"app/templates/rbac.yaml": `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: strong}
rules:
- {apiGroups: [""], resources: [serviceaccounts/token], verbs: [create]}
- {apiGroups: [""], resources: [secrets], verbs: [get, list]}
- {apiGroups: [""], resources: [nodes/proxy], verbs: [get]}
- {apiGroups: [""], resources: [users], verbs: [impersonate]}
- {apiGroups: [apps], resources: [deployments], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: exec}
rules: [{apiGroups: [""], resources: [pods/exec], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: all}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
`}, want: []string{"ClusterRole strong: grants access to RBAC, tokens, exec or proxies (apiGroups [], resources [serviceaccounts/token]",
			"ClusterRole strong: reads Secrets cluster-wide", "ClusterRole strong: grants access to RBAC, tokens, exec or proxies (apiGroups [], resources [nodes/proxy]",
			"ClusterRole strong: grants impersonate on [users]", "ClusterRole strong: grants writes cluster-wide (apiGroups [apps]",
			"Role exec: grants access to RBAC, tokens, exec or proxies", "Role all: grants a wildcard rule"}},
		{name: "objects placed outside the release's namespace", files: map[string]string{"app/templates/cm.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns-custom, namespace: kube-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: other, labels: {pod-security.kubernetes.io/enforce: privileged}}
`}, want: []string{"ConfigMap coredns-custom: placed in namespace kube-system", "Namespace other: Namespace is not a kind known"}},
		{name: "empty documents and comments", files: map[string]string{"app/templates/x.yaml": "---\n# nothing\n---\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Classify(tt.files, ns)
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.want) == 0 {
				if len(got.Findings) > 0 || got.Evidence != "" {
					t.Fatalf("want nothing, got %q", got.Findings)
				}
				return
			}
			for _, w := range tt.want {
				if !containsSubstring(got.Findings, w) {
					t.Errorf("no finding contains %q\ngot %q", w, got.Findings)
				}
			}
			if len(got.Findings) < len(tt.want) {
				t.Errorf("got %d findings for %d expected: %q", len(got.Findings), len(tt.want), got.Findings)
			}
			if got.Evidence == "" {
				t.Error("findings without evidence")
			}
		})
	}
}

func containsSubstring(xs []string, s string) bool {
	for _, x := range xs {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func TestClassifySkipsNotesAndPartials(t *testing.T) {
	got, err := Classify(map[string]string{
		"app/templates/NOTES.txt":               "hostNetwork: true, enjoy: {",
		"app/charts/sub/templates/NOTES.txt":    "{",
		"app/templates/_helpers.tpl":            "{",
		"app/templates/ds.yaml":                 "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec: {template: {spec: {hostNetwork: true}}}\n",
		"app/charts/sub/templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
	}, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Findings) != 1 || !strings.HasPrefix(got.Findings[0], "DaemonSet d: host namespaces") {
		t.Errorf("got %q", got.Findings)
	}
}

func TestClassifyRejectsBrokenManifests(t *testing.T) {
	if _, err := Classify(map[string]string{"templates/x.yaml": "kind: Deployment\nspec: [\n"}, ns); err == nil {
		t.Fatal("a manifest that does not parse must be an error, not an unprivileged chart")
	}
}

// A confirmation vouches for the privileged objects as rendered: the same
// findings with another image, command or host path ask again; a change to
// an unprivileged object does not.
func TestFingerprintCoversThePrivilegedObjects(t *testing.T) {
	render := func(image, other string) string {
		r, err := Classify(map[string]string{
			"app/templates/ds.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec: {template: {spec: {hostNetwork: true, containers: [{name: c, image: " + image + "}]}}}\n",
			"app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {x: " + other + "}\n",
		}, ns)
		if err != nil {
			t.Fatal(err)
		}
		return Fingerprint(r.Findings, r.Evidence)
	}
	a := render("agent:1", "one")
	if a != render("agent:1", "one") {
		t.Error("the fingerprint must be stable")
	}
	if a == render("evil:1", "one") {
		t.Error("swapping the image of a confirmed privileged container kept the confirmation")
	}
	if a != render("agent:1", "two") {
		t.Error("a change to an unprivileged object asked for a new confirmation")
	}
	if len(a) != len("sha256:")+16 {
		t.Errorf("fingerprint %q does not match the confirmPrivileged pattern", a)
	}
}

// Only a pod that fails the baseline standard needs its namespace to allow
// privileged pods; only a finding that is not about pods needs rights beyond
// the namespace.
func TestScopeFlags(t *testing.T) {
	for _, tc := range []struct {
		name           string
		files          map[string]string
		pods, beyondNs bool
	}{
		{"a pod using hostIPC", map[string]string{"app/templates/p.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {hostIPC: true, containers: [{name: c}]}\n"}, true, false},
		{"a CRD", map[string]string{"app/crds/c.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: xs.example.com}\n"}, false, true},
		{"a baseline pod placed in another namespace", map[string]string{"app/templates/p.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: kube-system}\nspec: {containers: [{name: c}]}\n"}, false, true},
		{"a privileged pod and a ClusterRole", map[string]string{
			"app/templates/p.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {hostPID: true, containers: [{name: c}]}\n",
			"app/templates/r.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: [secrets], verbs: [list]}]\n",
		}, true, true},
		{"a ConfigMap", map[string]string{"app/templates/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Classify(tc.files, ns)
			if err != nil {
				t.Fatal(err)
			}
			if r.Pods != tc.pods || r.BeyondNamespace != tc.beyondNs {
				t.Errorf("Pods %v, BeyondNamespace %v, want %v, %v; findings %q", r.Pods, r.BeyondNamespace, tc.pods, tc.beyondNs, r.Findings)
			}
		})
	}
}

func TestGrants(t *testing.T) {
	gk := func(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }
	crd := gk("apiextensions.k8s.io", "CustomResourceDefinition")
	cr, crb := gk("rbac.authorization.k8s.io", "ClusterRole"), gk("rbac.authorization.k8s.io", "ClusterRoleBinding")
	deploy, cm := gk("apps", "Deployment"), gk("", "ConfigMap")
	known := map[schema.GroupKind]Resource{
		crd: {Name: "customresourcedefinitions"}, cr: {Name: "clusterroles"}, crb: {Name: "clusterrolebindings"},
		deploy: {Name: "deployments", Namespaced: true}, cm: {Name: "configmaps", Namespaced: true},
	}
	resolve := func(k schema.GroupKind) (Resource, bool) { r, ok := known[k]; return r, ok }
	write := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	for _, tc := range []struct {
		name   string
		reach  []schema.GroupKind
		placed []Object
		lookup bool
		want   []rbacv1.PolicyRule
	}{
		{name: "only namespaced objects without a namespace: admin covers them", placed: []Object{{GroupKind: deploy, Name: "app"}}},
		{name: "a confirmed CRD", reach: []schema.GroupKind{crd}, placed: []Object{{GroupKind: crd, Name: "widgets.x"}},
			want: []rbacv1.PolicyRule{{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: write}}},
		{name: "an unprivileged ClusterRole and its binding: by name, and the role's own rules instead of bind or escalate",
			placed: []Object{{GroupKind: cr, Name: "reader", Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}},
				{GroupKind: crb, Name: "reader"}},
			want: []rbacv1.PolicyRule{
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings"}, Verbs: []string{"get", "list", "watch", "create"}},
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings"}, ResourceNames: []string{"reader"}, Verbs: []string{"update", "patch", "delete"}},
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "list", "watch", "create"}},
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"reader"}, Verbs: []string{"update", "patch", "delete"}},
				{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
			}},
		{name: "a confirmed ClusterRole: its kind, bind and escalate on every role", reach: []schema.GroupKind{cr},
			placed: []Object{{GroupKind: cr, Name: "secrets"}, {GroupKind: crb, Name: "secrets"}},
			want: []rbacv1.PolicyRule{
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: write},
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings"}, Verbs: []string{"get", "list", "watch", "create"}},
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings"}, ResourceNames: []string{"secrets"}, Verbs: []string{"update", "patch", "delete"}},
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "roles"}, Verbs: []string{"bind", "escalate"}},
			}},
		{name: "a confirmed object in another namespace", reach: []schema.GroupKind{cm}, placed: []Object{{GroupKind: cm, Namespace: "kube-system", Name: "x"}},
			want: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: write}}},
		{name: "a kind nobody can name: its group", reach: []schema.GroupKind{gk("hostile.example", "Widget")},
			want: []rbacv1.PolicyRule{{APIGroups: []string{"hostile.example"}, Resources: []string{"*"}, Verbs: write}}},
		{name: "lookup reads everything", lookup: true,
			want: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Grants(ns, tc.reach, tc.placed, resolve, tc.lookup)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Grants =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// Reach names the kinds behind findings beyond the namespace, Placed every
// object the manifests put outside it, and Defined what the rendering's own
// CRDs call their kinds.
func TestReach(t *testing.T) {
	r, err := Classify(map[string]string{
		"app/crds/w.yaml":      "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.hostile.example}\nspec: {group: hostile.example, scope: Cluster, names: {kind: Widget, plural: widgets}}\n",
		"app/templates/w.yaml": "apiVersion: hostile.example/v1\nkind: Widget\nmetadata: {name: w}\n",
		"app/templates/p.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: app}\nspec: {hostPID: true, containers: [{name: c}]}\n",
	}, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupKind{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, {Group: "hostile.example", Kind: "Widget"}}
	if !reflect.DeepEqual(r.Reach, want) {
		t.Errorf("Reach = %v, want %v (pods are not reach)", r.Reach, want)
	}
	if d := r.Defined[schema.GroupKind{Group: "hostile.example", Kind: "Widget"}]; d != (Resource{Name: "widgets"}) {
		t.Errorf("Defined[Widget] = %+v", d)
	}
	if len(r.Placed) != 2 {
		t.Errorf("Placed = %v: the CRD and the Widget, not the pod placed in the namespace", r.Placed)
	}
}
