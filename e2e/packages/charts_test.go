package packages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"sigs.k8s.io/yaml"
)

// obj is one rendered manifest, decoded.
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

func (o obj) container(i int) obj {
	cs, _ := o.podSpec()["containers"].([]any)
	if i >= len(cs) {
		return nil
	}
	m, _ := cs[i].(map[string]any)
	return obj(m)
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

type rendered map[string]obj // "Kind/name" -> object

func (r rendered) must(t *testing.T, kindName string) obj {
	t.Helper()
	o, ok := r[kindName]
	if !ok {
		keys := make([]string, 0, len(r))
		for k := range r {
			keys = append(keys, k)
		}
		t.Fatalf("%s not rendered; got %v", kindName, keys)
	}
	return o
}

type renderOpts struct {
	release, namespace string
	values             map[string]any
	valuesFiles        []string // relative to the chart, layered in order
	apiVersions        []string
}

// render does what `helm template` does: client-only install, dry run.
func render(chartDir string, o renderOpts) (rendered, error) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return nil, err
	}
	if reqs := ch.Metadata.Dependencies; reqs != nil {
		if err := action.CheckDependencies(ch, reqs); err != nil {
			return nil, err
		}
	}
	vals := map[string]any{}
	for _, f := range o.valuesFiles {
		v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, f))
		if err != nil {
			return nil, err
		}
		vals = chartutil.CoalesceTables(v, vals)
	}
	if o.values != nil {
		vals = chartutil.CoalesceTables(o.values, vals)
	}

	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = o.release
	inst.Namespace = o.namespace
	inst.APIVersions = o.apiVersions
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return nil, err
	}

	out := rendered{}
	for _, m := range releaseutil.SplitManifests(rel.Manifest) {
		var o obj
		if err := yaml.Unmarshal([]byte(m), &o); err != nil {
			return nil, err
		}
		if o == nil {
			continue
		}
		out[o.str("kind")+"/"+o.str("metadata", "name")] = o
	}
	return out, nil
}

func systemChart(name string) string { return filepath.Join(TestdataDir(), "system", name) }

// vendored copies a system chart and vendors libraries into its charts/, as
// the operator's chart builder does when it builds an artifact.
func vendored(t *testing.T, name string, libs ...string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	copyTree(t, systemChart(name), dst)
	for _, lib := range libs {
		copyTree(t, filepath.Join(TestdataDir(), "library", lib), filepath.Join(dst, "charts", lib))
	}
	return dst
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every chart must render with its defaults and pass `helm lint` without
// warnings; charts that need a library are checked vendored.
func TestChartsRenderAndLint(t *testing.T) {
	needsLibs := map[string][]string{"metrics-server": {"cozy-lib"}}
	var names []string
	for _, tier := range []string{"system", "apps"} {
		entries, err := os.ReadDir(filepath.Join(TestdataDir(), tier))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			t.Fatalf("no charts under %s/", tier)
		}
		for _, e := range entries {
			names = append(names, tier+"/"+e.Name())
		}
	}
	for _, path := range names {
		name := filepath.Base(path)
		t.Run(path, func(t *testing.T) {
			dir := filepath.Join(TestdataDir(), path)
			if libs := needsLibs[name]; libs != nil {
				dir = vendored(t, name, libs...)
			}
			objs, err := render(dir, renderOpts{release: name, namespace: "cozy-" + name})
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if len(objs) == 0 {
				t.Fatal("rendered nothing")
			}
			linter := lint.All(dir, nil, "cozy-"+name, false)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				}
			}
		})
	}
}

func TestLibraryIsNotVendoredInTheTree(t *testing.T) {
	g := NewWithT(t)
	_, err := os.Stat(filepath.Join(systemChart("metrics-server"), "charts", "cozy-lib"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the builder vendors cozy-lib; the tree must not")

	_, err = render(systemChart("metrics-server"), renderOpts{release: "metrics-server", namespace: "cozy-monitoring"})
	g.Expect(err).To(MatchError(ContainSubstring("cozy-lib")))

	ch, err := loader.LoadDir(filepath.Join(TestdataDir(), "library", "cozy-lib"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Metadata.Type).To(Equal("library"))
}

func TestCilium(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(systemChart("cilium"), renderOpts{
		release: "cilium", namespace: "cozy-cilium",
		values: map[string]any{"cilium": map[string]any{
			"k8sServiceHost": "kubernetes-foo.tenant-bar.svc",
			// A float, as values decoded from JSON (a HelmRelease) arrive.
			"k8sServicePort": float64(6443),
			"routingMode":    "tunnel",
			"MTU":            1350,
		}},
	})
	g.Expect(err).NotTo(HaveOccurred())

	ds := objs.must(t, "DaemonSet/cilium")
	g.Expect(ds.str("metadata", "namespace")).To(Equal("cozy-cilium"))
	g.Expect(ds.get("spec", "template", "metadata", "labels")).To(And(
		HaveKeyWithValue("k8s-app", "cilium"),
		HaveKeyWithValue("app.kubernetes.io/name", "cilium-agent")))
	g.Expect(ds.podSpec()["hostNetwork"]).To(BeTrue())
	g.Expect(ds.podSpec()["priorityClassName"]).To(Equal("system-node-critical"))
	g.Expect(ds.podSpec()["tolerations"]).To(Equal([]any{map[string]any{"operator": "Exists"}}))
	g.Expect(ds.container(0).env()).To(And(
		HaveKeyWithValue("KUBERNETES_SERVICE_HOST", "kubernetes-foo.tenant-bar.svc"),
		HaveKeyWithValue("KUBERNETES_SERVICE_PORT", "6443")))
	g.Expect(ds.get("spec", "template", "metadata", "annotations")).To(HaveKey("cilium.io/cilium-configmap-checksum"))

	op := objs.must(t, "Deployment/cilium-operator")
	g.Expect(op.get("spec", "replicas")).To(BeNumerically("==", 1))
	g.Expect(op.podSpec()["hostNetwork"]).To(BeTrue())
	g.Expect(op.podSpec()["tolerations"]).To(Equal([]any{map[string]any{"operator": "Exists"}}))
	g.Expect(op.container(0).env()).To(HaveKeyWithValue("KUBERNETES_SERVICE_HOST", "kubernetes-foo.tenant-bar.svc"))

	cm := objs.must(t, "ConfigMap/cilium-config")
	g.Expect(cm.get("data")).To(And(
		HaveKeyWithValue("k8s-service-host", "kubernetes-foo.tenant-bar.svc"),
		HaveKeyWithValue("k8s-service-port", "6443"),
		HaveKeyWithValue("kube-proxy-replacement", "true"),
		HaveKeyWithValue("ipam", "kubernetes"),
		HaveKeyWithValue("routing-mode", "tunnel"),
		HaveKeyWithValue("mtu", "1350")))

	for _, name := range []string{"ServiceAccount/cilium", "ServiceAccount/cilium-operator",
		"ClusterRole/cilium", "ClusterRoleBinding/cilium", "ClusterRole/cilium-operator",
		"ClusterRoleBinding/cilium-operator", "ConfigMap/cni-configuration"} {
		objs.must(t, name)
	}
}

func TestCiliumDefaultsUseInClusterEndpoint(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(systemChart("cilium"), renderOpts{release: "cilium", namespace: "cozy-cilium"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs.must(t, "DaemonSet/cilium").container(0).env()).NotTo(HaveKey("KUBERNETES_SERVICE_HOST"))
}

func TestCiliumTalosOverlay(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(systemChart("cilium"), renderOpts{
		release: "cilium", namespace: "cozy-cilium", valuesFiles: []string{"values-talos.yaml"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs.must(t, "DaemonSet/cilium").container(0).env()).To(And(
		HaveKeyWithValue("KUBERNETES_SERVICE_HOST", "localhost"),
		HaveKeyWithValue("KUBERNETES_SERVICE_PORT", "7445")))
}

func TestCiliumSchemaRejectsBadEndpoint(t *testing.T) {
	for name, v := range map[string]map[string]any{
		"port as string": {"k8sServicePort": "6443"},
		"port zero":      {"k8sServicePort": 0},
		"port too big":   {"k8sServicePort": 70000},
		"port fraction":  {"k8sServicePort": 6443.5},
		"host not text":  {"k8sServiceHost": 10},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(systemChart("cilium"), renderOpts{
				release: "cilium", namespace: "cozy-cilium", values: map[string]any{"cilium": v},
			})
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring("schema")))
		})
	}
}

func TestCoreDNS(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(systemChart("coredns"), renderOpts{
		release: "coredns", namespace: "kube-system",
		values: map[string]any{"coredns": map[string]any{"service": map[string]any{"clusterIP": "10.95.0.10"}}},
	})
	g.Expect(err).NotTo(HaveOccurred())

	d := objs.must(t, "Deployment/coredns")
	g.Expect(d.get("spec", "replicas")).To(BeNumerically("==", 2))
	g.Expect(d.get("spec", "template", "metadata", "labels")).To(HaveKeyWithValue("k8s-app", "kube-dns"))
	g.Expect(d.podSpec()).NotTo(HaveKey("hostNetwork"))
	g.Expect(d.podSpec()["tolerations"]).To(Equal([]any{map[string]any{"key": "CriticalAddonsOnly", "operator": "Exists"}}))
	g.Expect(d.podSpec()["serviceAccountName"]).To(Equal("kube-dns"))

	svc := objs.must(t, "Service/kube-dns")
	g.Expect(svc.get("spec", "clusterIP")).To(Equal("10.95.0.10"))
	g.Expect(svc.get("spec", "selector")).To(HaveKeyWithValue("k8s-app", "kube-dns"))

	corefile := objs.must(t, "ConfigMap/coredns").str("data", "Corefile")
	g.Expect(corefile).To(HavePrefix(".:53 {\n"))
	g.Expect(corefile).To(ContainSubstring("\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n        pods insecure\n"))
	g.Expect(corefile).To(ContainSubstring("\n    forward . /etc/resolv.conf\n"))
	g.Expect(strings.TrimSpace(corefile)).To(HaveSuffix("}"))

	for _, name := range []string{"ServiceAccount/kube-dns", "ClusterRole/coredns", "ClusterRoleBinding/coredns"} {
		objs.must(t, name)
	}

	objs, err = render(systemChart("coredns"), renderOpts{release: "coredns", namespace: "kube-system"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs.must(t, "Service/kube-dns").get("spec")).NotTo(HaveKey("clusterIP"))
}

func TestKubeProxy(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(systemChart("kube-proxy"), renderOpts{
		release: "kube-proxy", namespace: "kube-system",
		values: map[string]any{"kube-proxy": map[string]any{
			"apiServer":   map[string]any{"host": "kubernetes-foo.tenant-bar.svc", "port": 6443},
			"clusterCIDR": "10.243.0.0/16",
		}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	ds := objs.must(t, "DaemonSet/kube-proxy")
	g.Expect(ds.podSpec()["hostNetwork"]).To(BeTrue())
	g.Expect(ds.podSpec()["tolerations"]).To(Equal([]any{map[string]any{"operator": "Exists"}}))
	cm := objs.must(t, "ConfigMap/kube-proxy")
	g.Expect(cm.str("data", "kubeconfig.conf")).To(ContainSubstring("server: https://kubernetes-foo.tenant-bar.svc:6443"))
	g.Expect(cm.str("data", "config.conf")).To(ContainSubstring(`clusterCIDR: "10.243.0.0/16"`))
	objs.must(t, "ClusterRoleBinding/kube-proxy")
}

func TestKubevirtCSINode(t *testing.T) {
	g := NewWithT(t)
	opts := renderOpts{
		release: "csi", namespace: "cozy-csi",
		values: map[string]any{"storageClasses": map[string]any{
			"replicated": map[string]any{"infraStorageClass": "replicated", "default": true},
			"fast":       map[string]any{"infraStorageClass": "nvme", "default": false},
		}},
	}
	objs, err := render(systemChart("kubevirt-csi-node"), opts)
	g.Expect(err).NotTo(HaveOccurred())

	objs.must(t, "CSIDriver/csi.kubevirt.io")
	objs.must(t, "ServiceAccount/kubevirt-csi-node-sa")
	objs.must(t, "ClusterRole/kubevirt-csi-node-cr")
	ds := objs.must(t, "DaemonSet/kubevirt-csi-node")
	g.Expect(ds.podSpec()).NotTo(HaveKey("hostNetwork"))
	g.Expect(ds.podSpec()["priorityClassName"]).To(Equal("system-node-critical"))
	g.Expect(ds.get("spec", "template", "metadata", "labels")).To(HaveKeyWithValue("app", "kubevirt-csi-driver"))

	rep := objs.must(t, "StorageClass/replicated")
	g.Expect(rep.get("provisioner")).To(Equal("csi.kubevirt.io"))
	g.Expect(rep.get("parameters")).To(HaveKeyWithValue("infraStorageClassName", "replicated"))
	g.Expect(rep.get("metadata", "annotations")).To(HaveKeyWithValue("storageclass.kubernetes.io/is-default-class", "true"))
	fast := objs.must(t, "StorageClass/fast")
	g.Expect(fast.get("parameters")).To(HaveKeyWithValue("infraStorageClassName", "nvme"))
	g.Expect(fast.get("metadata", "annotations")).To(BeNil())

	g.Expect(objs).NotTo(HaveKey("VolumeSnapshotClass/kubevirt-csi-snapclass"))
	opts.apiVersions = []string{"snapshot.storage.k8s.io/v1"}
	objs, err = render(systemChart("kubevirt-csi-node"), opts)
	g.Expect(err).NotTo(HaveOccurred())
	vsc := objs.must(t, "VolumeSnapshotClass/kubevirt-csi-snapclass")
	g.Expect(vsc.get("driver")).To(Equal("csi.kubevirt.io"))
}

func TestMetricsServer(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(vendored(t, "metrics-server", "cozy-lib"), renderOpts{release: "metrics-server", namespace: "cozy-monitoring"})
	g.Expect(err).NotTo(HaveOccurred())
	d := objs.must(t, "Deployment/metrics-server")
	g.Expect(d.podSpec()).NotTo(HaveKey("hostNetwork"))
	g.Expect(d.container(0)["args"]).To(ContainElement("--kubelet-insecure-tls"))
	g.Expect(objs.must(t, "PodDisruptionBudget/metrics-server").get("metadata", "labels")).To(
		HaveKeyWithValue("helm.sh/chart", "metrics-server-0.1.0"))
	objs.must(t, "ServiceMonitor/metrics-server")
	g.Expect(objs).NotTo(HaveKey("APIService/v1beta1.metrics.k8s.io"))
}

func TestCertManager(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(systemChart("cert-manager"), renderOpts{release: "cert-manager", namespace: "cozy-cert-manager"})
	g.Expect(err).NotTo(HaveOccurred())
	objs.must(t, "Deployment/cert-manager")
	objs.must(t, "Deployment/cert-manager-webhook")
	for k := range objs {
		g.Expect(k).NotTo(HavePrefix("ValidatingWebhookConfiguration/"))
		g.Expect(k).NotTo(HavePrefix("MutatingWebhookConfiguration/"))
	}

	objs, err = render(systemChart("cert-manager"), renderOpts{
		release: "cert-manager", namespace: "cozy-cert-manager",
		values: map[string]any{"cert-manager": map[string]any{"config": map[string]any{
			"apiVersion": "controller.config.cert-manager.io/v1alpha1", "kind": "ControllerConfiguration", "enableGatewayAPI": true,
		}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs.must(t, "ConfigMap/cert-manager").str("data", "config.yaml")).To(ContainSubstring("enableGatewayAPI: true"))
}

func TestCRDCharts(t *testing.T) {
	for chart, crds := range map[string][]string{
		"prometheus-operator-crds": {"servicemonitors.monitoring.coreos.com"},
		"cert-manager-crds":        {"certificates.cert-manager.io"},
		"vsnap-crd": {
			"volumesnapshotclasses.snapshot.storage.k8s.io",
			"volumesnapshots.snapshot.storage.k8s.io",
			"volumesnapshotcontents.snapshot.storage.k8s.io",
		},
	} {
		t.Run(chart, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(systemChart(chart), renderOpts{release: chart, namespace: "cozy-" + chart})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).To(HaveLen(len(crds)))
			for _, name := range crds {
				crd := objs.must(t, "CustomResourceDefinition/"+name)
				g.Expect(crd.str("spec", "group")).To(Equal(strings.SplitN(name, ".", 2)[1]))
				if strings.HasSuffix(name, ".k8s.io") {
					g.Expect(crd.get("metadata", "annotations")).To(HaveKey("api-approved.kubernetes.io"))
				}
				expectStructural(t, crd)
			}
		})
	}
}

// expectStructural runs the apiserver's own structural-schema check, which
// rejects a CRD at create time; a typo in a field name fails the strict decode.
func expectStructural(t *testing.T, o obj) {
	t.Helper()
	raw, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatalf("%s: %v", o.str("metadata", "name"), err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("%s/%s: no schema", crd.Name, v.Name)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			t.Fatalf("%s/%s: %v", crd.Name, v.Name, err)
		}
		if errs := structuralschema.ValidateStructural(nil, s); len(errs) > 0 {
			t.Errorf("%s/%s: not structural: %v", crd.Name, v.Name, errs.ToAggregate())
		}
	}
}
