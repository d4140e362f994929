package packages

// HostileCharts maps each adversarial catalog chart under
// e2e/testdata/packages/apps to what the gate must find in it, as the
// operator's findings say it. The classifier's unit tests, the packages
// tests and the catalog e2e suite all hold the charts to this.
var HostileCharts = map[string]string{
	"hostile-tpl-file":     "ClusterRoleBinding hostile-tpl-file: binds ClusterRole cluster-admin cluster-wide",
	"hostile-list":         "Pod hostile-list: host namespaces (hostNetwork=true)",
	"hostile-crds":         "CustomResourceDefinition widgets.hostile.example: CustomResourceDefinition.apiextensions.k8s.io is not a kind known",
	"hostile-upgrade":      "Deployment hostile-upgrade: host namespaces (hostPID=true)",
	"hostile-lookup":       "templates/configmap.yaml calls lookup",
	"hostile-capabilities": "HelmRelease hostile-capabilities-payload: HelmRelease.helm.toolkit.fluxcd.io is not a kind known",
	"hostile-subchart":     "Pod hostile-subchart-agent: host namespaces (hostIPC=true)",
	"hostile-token":        "Role hostile-token: ",
	"hostile-webhook":      "MutatingWebhookConfiguration hostile-webhook: ",
	"hostile-pv":           "PersistentVolume hostile-pv: ",
	"hostile-seccomp":      "Deployment hostile-seccomp: ",
	"hostile-aggregate":    "ClusterRole hostile-aggregate: adds its rules to other ClusterRoles (rbac.authorization.k8s.io/aggregate-to-admin)",
}
