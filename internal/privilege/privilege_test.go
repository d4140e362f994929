package privilege

import (
	"slices"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string
	}{
		{name: "plain deployment", manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        securityContext: {capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}}
        ports: [{containerPort: 80}]
`},
		{name: "hostNetwork daemonset", manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ingress}
spec:
  template:
    spec:
      hostNetwork: true
      containers: [{name: controller, ports: [{containerPort: 443, hostPort: 443}]}]
`, want: []string{"DaemonSet ingress: container controller uses hostPort 443", "DaemonSet ingress: hostNetwork"}},
		{name: "hostPath, hostPID and hostIPC in a CronJob", manifest: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: scan}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          hostPID: true
          hostIPC: true
          volumes: [{name: root, hostPath: {path: /}}]
          containers: [{name: scan}]
`, want: []string{"CronJob scan: hostIPC", "CronJob scan: hostPID", "CronJob scan: hostPath volume root (/)"}},
		{name: "privileged init container and added capabilities", manifest: `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers: [{name: init, securityContext: {privileged: true}}]
  containers: [{name: main, securityContext: {capabilities: {add: [SYS_ADMIN, NET_ADMIN, NET_BIND_SERVICE]}}}]
`, want: []string{"Pod p: container init is privileged", "Pod p: container main adds capabilities NET_ADMIN,SYS_ADMIN"}},
		{name: "cluster-wide RBAC", manifest: `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: all}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
- {apiGroups: [""], resources: [users], verbs: [impersonate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: sa, namespace: ns}]
`, want: []string{
			"ClusterRole all: grants a wildcard rule (apiGroups [*], resources [*], verbs [*])",
			"ClusterRole all: grants impersonate on [users]",
			"ClusterRoleBinding admin: binds cluster-admin",
		}},
		{name: "namespaced RBAC is not cluster-wide", manifest: `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: all}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
`},
		{name: "empty documents and comments", manifest: "---\n# nothing\n---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Classify(map[string]string{"templates/x.yaml": tt.manifest})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestClassifySkipsNotesAndPartials(t *testing.T) {
	got, err := Classify(map[string]string{
		"app/templates/NOTES.txt":    "hostNetwork: true, enjoy: {",
		"app/templates/_helpers.tpl": "",
		"app/templates/ds.yaml":      "kind: DaemonSet\nmetadata: {name: d}\nspec: {template: {spec: {hostNetwork: true}}}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"DaemonSet d: hostNetwork"}) {
		t.Errorf("got %q", got)
	}
}

func TestClassifyRejectsBrokenManifests(t *testing.T) {
	if _, err := Classify(map[string]string{"templates/x.yaml": "kind: Deployment\nspec: [\n"}); err == nil {
		t.Fatal("a manifest that does not parse must be an error, not an unprivileged chart")
	}
}

func TestFingerprint(t *testing.T) {
	a := Fingerprint([]string{"DaemonSet x: hostNetwork"})
	if a != Fingerprint([]string{"DaemonSet x: hostNetwork"}) {
		t.Error("the fingerprint must be stable")
	}
	if a == Fingerprint([]string{"DaemonSet x: hostNetwork", "DaemonSet x: hostPID"}) {
		t.Error("a new finding must change the fingerprint")
	}
	if len(a) != len("sha256:")+16 {
		t.Errorf("fingerprint %q does not match the confirmPrivileged pattern", a)
	}
}
