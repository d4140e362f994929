// Package charts holds stand-ins for charts that come from ordinary Helm
// repositories rather than the Cozystack packages tree. The tests pin what the
// operator relies on: the value keys it sets and the names, labels and
// placement of what the charts render.
package charts

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// The same small helpers as e2e/packages/charts_test.go; test files cannot be
// imported across packages.

type obj map[string]any

func (o obj) get(path ...string) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func (o obj) str(path ...string) string {
	s, _ := o.get(path...).(string)
	return s
}

func (o obj) podSpec() obj {
	m, _ := o.get("spec", "template", "spec").(map[string]any)
	return obj(m)
}

func (o obj) containerNamed(name string) obj {
	cs, _ := o.podSpec()["containers"].([]any)
	for _, c := range cs {
		if m, _ := c.(map[string]any); m["name"] == name {
			return obj(m)
		}
	}
	return nil
}

func (o obj) env() map[string]string {
	out := map[string]string{}
	list, _ := o["env"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			out[m["name"].(string)] = v
		}
	}
	return out
}

// volume returns the pod volume with the given name, nil if there is none.
func (o obj) volume(name string) obj {
	vs, _ := o.podSpec()["volumes"].([]any)
	for _, v := range vs {
		if m, _ := v.(map[string]any); m["name"] == name {
			return obj(m)
		}
	}
	return nil
}

type rendered struct {
	objs map[string]obj // "Kind/name" -> object
	raw  string         // everything Helm would send, hooks included
}

func (r rendered) must(t *testing.T, kindName string) obj {
	t.Helper()
	o, ok := r.objs[kindName]
	if !ok {
		keys := make([]string, 0, len(r.objs))
		for k := range r.objs {
			keys = append(keys, k)
		}
		t.Fatalf("%s not rendered; got %v", kindName, keys)
	}
	return o
}

const namespace = "kube-system"

// render does what `helm template` does: client-only install, dry run.
func render(chartDir string, values map[string]any) (rendered, error) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return rendered{}, err
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = chartDir
	inst.Namespace = namespace
	if values == nil {
		values = map[string]any{}
	}
	rel, err := inst.Run(ch, values)
	if err != nil {
		return rendered{}, err
	}

	out := rendered{objs: map[string]obj{}, raw: rel.Manifest}
	for _, h := range rel.Hooks {
		out.raw += "\n---\n" + h.Manifest
	}
	for _, m := range releaseutil.SplitManifests(out.raw) {
		var o obj
		if err := yaml.Unmarshal([]byte(m), &o); err != nil {
			return rendered{}, err
		}
		if o == nil {
			continue
		}
		out.objs[o.str("kind")+"/"+o.str("metadata", "name")] = o
	}
	return out, nil
}

const (
	occm   = "openstack-cloud-controller-manager"
	cinder = "openstack-cinder-csi"
	fake   = "fake-cloud-node"
)

func TestChartsRenderAndLint(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var charts []string
	for _, e := range entries {
		if e.IsDir() {
			charts = append(charts, e.Name())
		}
	}
	// A chart added without a test of its own would still be linted, but
	// one silently dropped should fail here.
	NewWithT(t).Expect(charts).To(ConsistOf(occm, cinder, fake))

	for _, name := range charts {
		t.Run(name, func(t *testing.T) {
			r, err := render(name, nil)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if len(r.objs) == 0 {
				t.Fatal("rendered nothing")
			}
			linter := lint.All(name, nil, namespace, false)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				}
			}
		})
	}
}

func TestChartVersionsTrackKubernetesMinor(t *testing.T) {
	for _, name := range []string{occm, cinder} {
		ch, err := loader.LoadDir(name)
		if err != nil {
			t.Fatal(err)
		}
		NewWithT(t).Expect(ch.Metadata.Version).To(Equal("2.37.0"), name)
	}
}

func TestOpenStackCCMDefaults(t *testing.T) {
	g := NewWithT(t)
	r, err := render(occm, nil)
	g.Expect(err).NotTo(HaveOccurred())

	r.must(t, "ServiceAccount/cloud-controller-manager")
	r.must(t, "ClusterRole/system:cloud-controller-manager")
	crb := r.must(t, "ClusterRoleBinding/system:cloud-controller-manager")
	g.Expect(crb.str("roleRef", "name")).To(Equal("system:cloud-controller-manager"))
	g.Expect(crb.get("subjects")).To(ConsistOf(map[string]any{
		"kind": "ServiceAccount", "name": "cloud-controller-manager", "namespace": namespace}))
	g.Expect(r.objs).NotTo(HaveKey("Secret/cloud-config"), "the Secret is seeded, not rendered")

	ds := r.must(t, "DaemonSet/"+occm)
	g.Expect(ds.str("metadata", "namespace")).To(Equal(namespace))
	g.Expect(ds.get("spec", "selector", "matchLabels")).To(Equal(map[string]any{"k8s-app": occm}))
	g.Expect(ds.get("spec", "template", "metadata", "labels")).To(HaveKeyWithValue("k8s-app", occm))
	ps := ds.podSpec()
	g.Expect(ps["hostNetwork"]).To(BeTrue())
	g.Expect(ps["dnsPolicy"]).To(Equal("Default"))
	g.Expect(ps["priorityClassName"]).To(Equal("system-node-critical"))
	g.Expect(ps["serviceAccountName"]).To(Equal("cloud-controller-manager"))
	g.Expect(ps).NotTo(HaveKey("nodeSelector"), "tenant clusters have no control-plane nodes")
	g.Expect(ps["tolerations"]).To(Equal([]any{
		map[string]any{"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
		map[string]any{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
		map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
	}))

	c := ds.containerNamed(occm)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.str("image")).To(Equal("registry.k8s.io/provider-os/openstack-cloud-controller-manager:v1.37.0"))
	g.Expect(c["args"]).To(ContainElements(
		"--cloud-config=$(CLOUD_CONFIG)", "--cloud-provider=openstack", "--use-service-account-credentials=false"))
	g.Expect(c.env()).To(HaveKeyWithValue("CLOUD_CONFIG", "/etc/config/cloud.conf"))
	g.Expect(c["volumeMounts"]).To(ContainElement(HaveKeyWithValue("mountPath", "/etc/config")))
	g.Expect(ds.volume("cloud-config-volume")).To(HaveKeyWithValue("secret", map[string]any{"secretName": "cloud-config"}))
}

func TestOpenStackCCMValues(t *testing.T) {
	g := NewWithT(t)
	r, err := render(occm, map[string]any{
		"secret":              map[string]any{"name": "tenant-cloud"},
		"controllerExtraArgs": "- --cluster-name={{ .Release.Namespace }}-foo\n- --controllers=cloud-node",
		"nodeSelector":        map[string]any{"node.cluster.x-k8s.io/backend": "openstack"},
		"image":               map[string]any{"tag": "v1.37.1"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	ds := r.must(t, "DaemonSet/"+occm)
	g.Expect(ds.volume("cloud-config-volume")).To(HaveKeyWithValue("secret", map[string]any{"secretName": "tenant-cloud"}))
	c := ds.containerNamed(occm)
	g.Expect(c["args"]).To(ContainElements("--cluster-name=kube-system-foo", "--controllers=cloud-node"))
	g.Expect(c.str("image")).To(HaveSuffix(":v1.37.1"))
	g.Expect(ds.podSpec()["nodeSelector"]).To(Equal(map[string]any{"node.cluster.x-k8s.io/backend": "openstack"}))
}

// The tenant's application credentials must never travel through values into
// the rendered release when the chart only mounts a seeded Secret.
func TestOpenStackCCMKeepsCloudConfigOutOfTheRelease(t *testing.T) {
	g := NewWithT(t)
	cloudConfig := map[string]any{"global": map[string]any{
		"auth-url":                      "https://keystone.example:5000/v3",
		"application-credential-id":     "id",
		"application-credential-secret": "SENTINEL",
	}}
	r, err := render(occm, map[string]any{"cloudConfig": cloudConfig})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.raw).NotTo(ContainSubstring("SENTINEL"))

	// Control: the check above can see the value when it is rendered.
	r, err = render(occm, map[string]any{"cloudConfig": cloudConfig, "secret": map[string]any{"create": true}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.must(t, "Secret/cloud-config").str("stringData", "cloud.conf")).To(Equal(
		"[Global]\napplication-credential-id = id\napplication-credential-secret = SENTINEL\n" +
			"auth-url = https://keystone.example:5000/v3\n"))
	ds := r.must(t, "DaemonSet/"+occm)
	g.Expect(ds.get("spec", "template", "metadata", "annotations")).To(HaveKey("checksum/cloud-config"))
}

func TestOpenStackCCMSchemaRequiresSecretName(t *testing.T) {
	for name, secret := range map[string]map[string]any{
		"empty":      {"name": ""},
		"not a text": {"name": 5},
		"removed":    {"name": nil},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(occm, map[string]any{"secret": secret})
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring("schema")))
		})
	}
}

func TestCinderCSIDefaults(t *testing.T) {
	g := NewWithT(t)
	r, err := render(cinder, nil)
	g.Expect(err).NotTo(HaveOccurred())

	drv := r.must(t, "CSIDriver/cinder.csi.openstack.org")
	g.Expect(drv.get("spec", "attachRequired")).To(BeTrue())

	ctrl := r.must(t, "Deployment/openstack-cinder-csi-controllerplugin")
	g.Expect(ctrl.get("spec", "replicas")).To(BeNumerically("==", 1))
	g.Expect(ctrl.get("spec", "template", "metadata", "labels")).To(And(
		HaveKeyWithValue("app", "openstack-cinder-csi"), HaveKeyWithValue("component", "controllerplugin")))
	g.Expect(ctrl.podSpec()).NotTo(HaveKey("hostNetwork"))
	g.Expect(ctrl.podSpec()).NotTo(HaveKey("tolerations"), "the controller waits for initialised, Ready nodes")
	g.Expect(ctrl.podSpec()["serviceAccountName"]).To(Equal("csi-cinder-controller-sa"))
	plugin := ctrl.containerNamed("cinder-csi-plugin")
	g.Expect(plugin.str("image")).To(Equal("registry.k8s.io/provider-os/cinder-csi-plugin:v1.37.0"))
	g.Expect(plugin["args"]).To(ContainElements("--cloud-config=$(CLOUD_CONFIG)", "--provide-node-service=false"))
	g.Expect(plugin.env()).To(HaveKeyWithValue("CLOUD_CONFIG", "/etc/kubernetes/cloud.conf"))
	for _, sidecar := range []string{"csi-attacher", "csi-provisioner", "csi-snapshotter", "csi-resizer", "liveness-probe"} {
		g.Expect(ctrl.containerNamed(sidecar)).NotTo(BeNil(), sidecar)
	}

	node := r.must(t, "DaemonSet/openstack-cinder-csi-nodeplugin")
	g.Expect(node.get("spec", "template", "metadata", "labels")).To(And(
		HaveKeyWithValue("app", "openstack-cinder-csi"), HaveKeyWithValue("component", "nodeplugin")))
	g.Expect(node.podSpec()["hostNetwork"]).To(BeTrue())
	g.Expect(node.podSpec()["tolerations"]).To(Equal([]any{map[string]any{"operator": "Exists"}}))
	g.Expect(node.podSpec()["serviceAccountName"]).To(Equal("csi-cinder-node-sa"))
	g.Expect(node.containerNamed("cinder-csi-plugin")["args"]).To(ContainElement("--provide-controller-service=false"))

	// Upstream's default: no Secret, the node's /etc/kubernetes instead.
	for _, w := range []obj{ctrl, node} {
		g.Expect(w.volume("cloud-config")).To(HaveKey("hostPath"))
	}
	g.Expect(r.objs).NotTo(HaveKey("Secret/cloud-config"))

	for _, sa := range []string{"csi-cinder-controller-sa", "csi-cinder-node-sa"} {
		r.must(t, "ServiceAccount/"+sa)
	}
	for role, sa := range map[string]string{
		"csi-attacher": "csi-cinder-controller-sa", "csi-provisioner": "csi-cinder-controller-sa",
		"csi-snapshotter": "csi-cinder-controller-sa", "csi-resizer": "csi-cinder-controller-sa",
		"csi-nodeplugin": "csi-cinder-node-sa",
	} {
		r.must(t, "ClusterRole/"+role+"-role")
		b := r.must(t, "ClusterRoleBinding/"+role+"-binding")
		g.Expect(b.str("roleRef", "name")).To(Equal(role + "-role"))
		g.Expect(b.get("subjects")).To(ConsistOf(map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": namespace}))
	}

	for name, policy := range map[string]string{"csi-cinder-sc-delete": "Delete", "csi-cinder-sc-retain": "Retain"} {
		sc := r.must(t, "StorageClass/"+name)
		g.Expect(sc.get("provisioner")).To(Equal("cinder.csi.openstack.org"))
		g.Expect(sc.get("reclaimPolicy")).To(Equal(policy))
		g.Expect(sc.get("allowVolumeExpansion")).To(BeTrue())
		g.Expect(sc.get("metadata", "annotations")).To(BeNil())
	}
}

func TestCinderCSIMountsSeededSecret(t *testing.T) {
	g := NewWithT(t)
	r, err := render(cinder, map[string]any{
		"secret": map[string]any{
			"enabled": true, "name": "tenant-cloud",
			"data": map[string]any{"cloud.conf": "[Global]\napplication-credential-secret = SENTINEL\n"},
		},
		"csi": map[string]any{"plugin": map[string]any{"controllerPlugin": map[string]any{"replicas": 2}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.raw).NotTo(ContainSubstring("SENTINEL"))
	ctrl := r.must(t, "Deployment/openstack-cinder-csi-controllerplugin")
	g.Expect(ctrl.get("spec", "replicas")).To(BeNumerically("==", 2))
	for _, w := range []obj{ctrl, r.must(t, "DaemonSet/openstack-cinder-csi-nodeplugin")} {
		g.Expect(w.volume("cloud-config")).To(HaveKeyWithValue("secret", map[string]any{"secretName": "tenant-cloud"}))
		g.Expect(w.containerNamed("cinder-csi-plugin")["volumeMounts"]).To(ContainElement(And(
			HaveKeyWithValue("name", "cloud-config"), HaveKeyWithValue("mountPath", "/etc/kubernetes"))))
	}

	// Control: with create the content is rendered, so the check above is not vacuous.
	r, err = render(cinder, map[string]any{"secret": map[string]any{
		"enabled": true, "create": true, "data": map[string]any{"cloud.conf": "SENTINEL"},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.must(t, "Secret/cloud-config").str("stringData", "cloud.conf")).To(Equal("SENTINEL"))
}

func TestCinderCSIWithoutCloudConfig(t *testing.T) {
	g := NewWithT(t)
	r, err := render(cinder, map[string]any{"secret": map[string]any{"enabled": false, "hostMount": false}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, w := range []obj{r.must(t, "Deployment/openstack-cinder-csi-controllerplugin"), r.must(t, "DaemonSet/openstack-cinder-csi-nodeplugin")} {
		g.Expect(w.volume("cloud-config")).To(BeNil())
		g.Expect(w.containerNamed("cinder-csi-plugin")["volumeMounts"]).NotTo(ContainElement(HaveKeyWithValue("name", "cloud-config")))
	}
}

func TestCinderCSIStorageClassToggles(t *testing.T) {
	g := NewWithT(t)
	r, err := render(cinder, map[string]any{"storageClass": map[string]any{"retain": map[string]any{"isDefault": true}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.must(t, "StorageClass/csi-cinder-sc-retain").get("metadata", "annotations")).To(
		HaveKeyWithValue("storageclass.kubernetes.io/is-default-class", "true"))
	g.Expect(r.must(t, "StorageClass/csi-cinder-sc-delete").get("metadata", "annotations")).To(BeNil())

	r, err = render(cinder, map[string]any{"storageClass": map[string]any{"enabled": false}})
	g.Expect(err).NotTo(HaveOccurred())
	for k := range r.objs {
		g.Expect(k).NotTo(HavePrefix("StorageClass/"))
	}
}

func TestFakeCloudNode(t *testing.T) {
	g := NewWithT(t)
	r, err := render(fake, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.objs).To(HaveLen(1))
	ds := r.must(t, "DaemonSet/fake-cloud-node")
	g.Expect(ds.get("spec", "template", "metadata", "labels")).To(Equal(map[string]any{"app": "fake-cloud-node"}))
	g.Expect(ds.podSpec()).NotTo(HaveKey("hostNetwork"))
	g.Expect(ds.str("metadata", "namespace")).To(Equal(namespace))
}
