package packages

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/helm"
	seederv1 "github.com/cozystack/tenant-operator/operator/apis/seeder/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	packagesctl "github.com/cozystack/tenant-operator/operator/packages"
	"github.com/cozystack/tenant-operator/variants"
)

// These tests read Cozystack's real packages tree as Cozystack publishes it
// (packed as `flux push artifact` packs it, so without its symbolic links)
// and check it against what the operator names and sets.

// realTree is the packages artifact's content as the operator sees it.
func realTree(t *testing.T) fs.FS {
	t.Helper()
	dir, err := CozystackDir()
	if err != nil {
		t.Fatal(err)
	}
	gz, err := PackAsFlux(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree := fstest.MapFS{}
	for _, e := range untar(t, gz) {
		if !strings.HasSuffix(e.name, "/") {
			tree[e.name] = &fstest.MapFile{Data: []byte(e.body), Mode: 0o644}
		}
	}
	return tree
}

// named is a chart the operator names, and by whom.
type named struct {
	by      string
	chart   bundle.ChartRef
	comp    *bundle.Component // nil for addon components
	release string
	ns      string
}

// everyNamedChart lists every packages-tree chart the embedded bundle, its
// variants and its addon catalogue name.
func everyNamedChart(t *testing.T) []named {
	t.Helper()
	def, err := bundle.Load(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	var out []named
	add := func(by string, cs []bundle.Component) {
		for i := range cs {
			c := &cs[i]
			if c.Chart.Path != "" {
				out = append(out, named{by: by + " component " + c.Name, chart: c.Chart, comp: c, release: c.Release.Name, ns: c.Release.Namespace})
			}
		}
	}
	add("bundle tenant", def.Components)
	vs, err := bundle.LoadVariants(variants.FS)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(vs))
	for name := range vs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		add("variant "+name, vs[name].Components)
	}
	addons, err := bundle.LoadAddons(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addons.Addons {
		for _, c := range a.Components {
			ref := addons.ChartRef(c)
			release, ns := c.Name, ""
			if c.Install != nil {
				if c.Install.ReleaseName != "" {
					release = c.Install.ReleaseName
				}
				ns = c.Install.Namespace
			}
			out = append(out, named{by: "addon " + a.Name, chart: ref, release: release, ns: ns})
		}
	}
	return out
}

// Every chart path the operator names must be a chart of the real tree: a
// path that is not there fails every tenant that needs it.
func TestNamedChartsExistInCozystacksTree(t *testing.T) {
	tree := realTree(t)
	for _, n := range everyNamedChart(t) {
		if _, err := fs.Stat(tree, n.chart.Path+"/Chart.yaml"); err != nil {
			t.Errorf("%s names %s, which Cozystack's packages tree does not have", n.by, n.chart.Path)
		}
	}
}

// facts are a tenant's cluster facts as the e2e suites seed them.
func facts(t *testing.T) bundle.Facts {
	t.Helper()
	def, err := bundle.Load(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	f, err := bundle.NewFacts(bundle.ClusterInput{
		APIEndpoint: "10.0.0.1:6443", PodCIDR: "10.243.0.0/16", ServiceCIDR: "10.95.0.0/16",
		StorageClasses: map[string]any{"replicated": map[string]any{"infraStorageClass": "replicated", "default": true}},
		KubeMinor:      "37",
	}, def.Settings)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// renderReal renders a named chart of the real tree as the operator would
// install it: built by the operator's chart builder, with the operator's
// values, against the APIs the cluster serves at that point (apis).
func renderReal(t *testing.T, tree fs.FS, n named, vals map[string]any, apis ...string) rendered {
	t.Helper()
	ch, err := helm.BuildFromTree(helm.TreeChart{Tree: tree, Path: n.chart.Path, Libraries: n.chart.Libraries, ValuesFiles: n.chart.ValuesFiles})
	if err != nil {
		t.Fatalf("%s: building %s: %v", n.by, n.chart.Path, err)
	}
	loaded, err := ch.Load()
	if err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = n.release, n.ns
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	inst.APIVersions = apis
	rel, err := inst.Run(loaded, vals)
	if err != nil {
		t.Fatalf("%s: rendering %s: %v", n.by, n.chart.Path, err)
	}
	out := rendered{}
	for _, m := range releaseutil.SplitManifests(rel.Manifest) {
		var o obj
		if err := yaml.Unmarshal([]byte(m), &o); err != nil {
			t.Fatal(err)
		}
		if o != nil {
			out[o.str("kind")+"/"+o.str("metadata", "name")] = o
		}
	}
	return out
}

func namedChart(t *testing.T, by string) named {
	t.Helper()
	for _, n := range everyNamedChart(t) {
		if n.by == by {
			return n
		}
	}
	t.Fatalf("nothing named %q", by)
	return named{}
}

// The bootstrap tier's values must reach the real charts' workloads: what
// the chart does with a key is the chart's business, so the test reads the
// rendered objects, not the values.
func TestBootstrapValuesReachTheRealCharts(t *testing.T) {
	tree, f := realTree(t), facts(t)
	// As the operator computes them (operator/tenantbundle components).
	values := func(n named) map[string]any {
		vals := bundle.Values(*n.comp, f, nil)
		ch, err := helm.BuildFromTree(helm.TreeChart{Tree: tree, Path: n.chart.Path})
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := ch.Load()
		if err != nil {
			t.Fatal(err)
		}
		bundle.NullOmittedDefaults(*n.comp, f, loaded.Values, vals)
		return vals
	}

	t.Run("cilium", func(t *testing.T) {
		g := NewWithT(t)
		n := namedChart(t, "bundle tenant component cilium")
		objs := renderReal(t, tree, n, values(n))
		agent := objs.must(t, "DaemonSet/cilium").container(0).env()
		g.Expect(agent).To(HaveKeyWithValue("KUBERNETES_SERVICE_HOST", "10.0.0.1"))
		g.Expect(agent).To(HaveKeyWithValue("KUBERNETES_SERVICE_PORT", "6443"))
		g.Expect(objs.must(t, "ConfigMap/cilium-config").get("data")).To(And(
			HaveKeyWithValue("kube-proxy-replacement", "true"),
			HaveKeyWithValue("routing-mode", "tunnel"),
			HaveKeyWithValue("mtu", "1350"),
		))
		g.Expect(objs.must(t, "DaemonSet/cilium").get("metadata", "labels")).To(HaveKeyWithValue("k8s-app", "cilium"),
			"the world's network simulator recognises the CNI by this label")
	})
	t.Run("coredns", func(t *testing.T) {
		g := NewWithT(t)
		n := namedChart(t, "bundle tenant component coredns")
		objs := renderReal(t, tree, n, values(n))
		g.Expect(objs.must(t, "Service/kube-dns").get("spec", "clusterIP")).To(Equal("10.95.0.10"))
		objs.must(t, "Deployment/coredns")
	})
	t.Run("kubevirt-csi-node", func(t *testing.T) {
		g := NewWithT(t)
		n := namedChart(t, "variant kubevirt component kubevirt-csi-node")
		objs := renderReal(t, tree, n, values(n), "snapshot.storage.k8s.io/v1/VolumeSnapshotClass")
		sc := objs.must(t, "StorageClass/replicated")
		g.Expect(sc.get("parameters", "infraStorageClassName")).To(Equal("replicated"))
		g.Expect(sc.get("metadata", "annotations")).To(HaveKeyWithValue("storageclass.kubernetes.io/is-default-class", "true"))
		g.Expect(objs).NotTo(HaveKey("StorageClass/kubevirt"), "only the StorageClasses the TenantBundle names")
		objs.must(t, "VolumeSnapshotClass/kubevirt-snapshots")
	})
}

// The VolumeSnapshotClass of kubevirt-csi-node is not guarded by the API's
// presence: the snapshot CRDs must come first, in the same tier.
func TestCSINodeNeedsTheSnapshotCRDsFirst(t *testing.T) {
	g := NewWithT(t)
	def, err := bundle.Load(bundles.FS, "tenant")
	g.Expect(err).NotTo(HaveOccurred())
	vs, err := bundle.LoadVariants(variants.FS)
	g.Expect(err).NotTo(HaveOccurred())
	full, err := def.With(vs["kubevirt"])
	g.Expect(err).NotTo(HaveOccurred())
	plan, err := full.Plan(facts(t))
	g.Expect(err).NotTo(HaveOccurred())
	var csi *bundle.Component
	for i := range plan {
		if plan[i].Name == "kubevirt-csi-node" {
			csi = &plan[i]
		}
	}
	g.Expect(csi).NotTo(BeNil())
	vsnap := full.Component("vsnap-crd")
	g.Expect(vsnap).NotTo(BeNil(), "the snapshot CRDs are part of the bootstrap, whatever the addon choices")
	g.Expect(csi.DependsOn).To(ContainElement("vsnap-crd"))
	g.Expect(vsnap.Tier).To(Equal(csi.Tier))

	objs := renderReal(t, realTree(t), namedChart(t, "bundle tenant component vsnap-crd"), nil)
	objs.must(t, "CustomResourceDefinition/volumesnapshotclasses.snapshot.storage.k8s.io")
}

// Every addon chart renders from the real tree with its defaults, against
// the APIs its dependencies bring.
// servedCRDs are the APIs of a tenant whose addons are all on.
var servedCRDs = []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "cert-manager.io/v1",
	"snapshot.storage.k8s.io/v1", "gateway.networking.k8s.io/v1", "autoscaling.k8s.io/v1", "operator.victoriametrics.com/v1beta1"}

func TestAddonChartsRender(t *testing.T) {
	tree := realTree(t)
	crds := servedCRDs
	for _, n := range everyNamedChart(t) {
		if !strings.HasPrefix(n.by, "addon ") {
			continue
		}
		t.Run(n.by, func(t *testing.T) {
			if objs := renderReal(t, tree, n, nil, crds...); len(objs) == 0 {
				t.Fatal("rendered nothing")
			}
		})
	}
}

// metrics-server's aggregated API points at its own Service.
func TestMetricsServerAPIWiring(t *testing.T) {
	g := NewWithT(t)
	objs := renderReal(t, realTree(t), namedChart(t, "addon metrics-server"), nil, "monitoring.coreos.com/v1")
	api := objs.must(t, "APIService/v1beta1.metrics.k8s.io")
	g.Expect(api.get("spec", "service")).To(And(HaveKeyWithValue("name", "metrics-server"), HaveKeyWithValue("namespace", "cozy-monitoring")))
	svc := objs.must(t, "Service/metrics-server")
	ports, _ := svc.get("spec", "ports").([]any)
	g.Expect(ports).To(HaveLen(1))
	g.Expect(ports[0]).To(HaveKeyWithValue("targetPort", "https"))
	dep := objs.must(t, "Deployment/metrics-server").container(0)
	g.Expect(dep["ports"]).To(ContainElement(And(HaveKeyWithValue("name", "https"), HaveKeyWithValue("containerPort", BeNumerically("==", 4443)))))
}

// clusterValueKeys are the keys of Cozystack's cluster values: those its
// platform writes into the cozystack-values Secret and those its charts and
// cozy-lib read from `_cluster`.
func clusterValueKeys(t *testing.T) map[string]bool {
	t.Helper()
	dir, err := CozystackDir()
	if err != nil {
		t.Fatal(err)
	}
	read := regexp.MustCompile(`_cluster(?:\.([a-z0-9-]+)|\)? "([a-z0-9-]+)")`)
	keys := map[string]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".tpl")) {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllStringSubmatch(string(raw), -1) {
			keys[m[1]+m[2]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// What the platform writes: the _cluster block of cozystack-values.
	raw, err := os.ReadFile(filepath.Join(dir, "core", "platform", "templates", "apps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	written := regexp.MustCompile(`(?m)^      ([a-z0-9-]+):`)
	for _, m := range written.FindAllStringSubmatch(string(raw), -1) {
		keys[m[1]] = true
	}
	return keys
}

// The operator's cozystack-values carry Cozystack's keys, not keys of its
// own: a chart or cozy-lib reading _cluster finds what it looks for.
func TestClusterValuesUseCozystacksKeys(t *testing.T) {
	g := NewWithT(t)
	known := clusterValueKeys(t)
	g.Expect(known).To(HaveKey("root-host"), "the tree reads root-host")
	g.Expect(known).To(HaveKey("ipv4-cluster-cidr"), "cozy-lib reads ipv4-cluster-cidr")
	tb := &tenantv1.TenantBundle{Spec: tenantv1.TenantBundleSpec{Bundle: "tenant",
		Cluster: tenantv1.ClusterFacts{APIEndpoint: "10.0.0.1:6443", PodCIDR: "10.243.0.0/16", ServiceCIDR: "10.95.0.0/16",
			RootHost: "tenant-foo.example.org", ImagesRegistry: "mirror.example.org"}}}
	values := packagesctl.ClusterValues(tb)
	for k := range values {
		g.Expect(known).To(HaveKey(k), "_cluster.%s is no key of Cozystack's", k)
	}
	g.Expect(values).To(And(
		HaveKeyWithValue("ipv4-cluster-cidr", "10.243.0.0/16"), HaveKeyWithValue("ipv4-service-cidr", "10.95.0.0/16"),
		HaveKeyWithValue("cluster-domain", "cluster.local"), HaveKeyWithValue("root-host", "tenant-foo.example.org"),
		HaveKeyWithValue("images-registry", "mirror.example.org")))
}

// The values the management side passes to the addons today reach what
// Cozystack's real charts render.
func TestAddonValuesReachTheRealCharts(t *testing.T) {
	tree := realTree(t)
	addons, err := bundle.LoadAddons(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	facts := bundle.Facts{bundle.FactClusterName: "kubernetes-foo", bundle.FactTenantNamespace: "tenant-foo",
		bundle.FactMonitoringNamespace: "tenant-root", bundle.FactPlatformClusterDomain: "cozy.local"}
	apis := []string{"monitoring.coreos.com/v1", "operator.victoriametrics.com/v1beta1", "autoscaling.k8s.io/v1",
		"nvidia.com/v1", "cert-manager.io/v1"}
	render := func(t *testing.T, addon string, enabled map[string]bool) rendered {
		t.Helper()
		raw, missing, err := addons.Get(addon).MainValues(facts, enabled, nil)
		if err != nil || len(missing) > 0 {
			t.Fatalf("values of %s: %v, missing %v", addon, err, missing)
		}
		vals := map[string]any{}
		if raw != nil {
			if err := yaml.Unmarshal(raw.Raw, &vals); err != nil {
				t.Fatal(err)
			}
		}
		return renderReal(t, tree, namedChart(t, "addon "+addon), vals, apis...)
	}
	find := func(t *testing.T, objs rendered, kind string) obj {
		t.Helper()
		for k, o := range objs {
			if strings.HasPrefix(k, kind+"/") {
				return o
			}
		}
		t.Fatalf("no %s rendered", kind)
		return nil
	}

	t.Run("monitoring-agents writes to the platform tenant's monitoring, labelled with the cluster", func(t *testing.T) {
		g := NewWithT(t)
		objs := render(t, "monitoring-agents", nil)
		agent := find(t, objs, "VMAgent")
		g.Expect(agent.get("spec", "remoteWrite")).To(ConsistOf(HaveKeyWithValue("url",
			"http://vminsert-shortterm.tenant-root.svc.cozy.local:8480/insert/0/prometheus")))
		g.Expect(agent.get("spec", "externalLabels")).To(HaveKeyWithValue("cluster", "kubernetes-foo"))
		var config string
		for k, o := range objs {
			if strings.HasPrefix(k, "ConfigMap/") && strings.Contains(k, "fluent-bit") {
				for _, v := range o["data"].(map[string]any) {
					config += v.(string)
				}
			}
		}
		g.Expect(config).To(And(ContainSubstring("Host vlinsert-generic.tenant-root.svc.cozy.local"),
			ContainSubstring("Add cluster kubernetes-foo"), ContainSubstring("Add tenant tenant-foo")))
	})
	t.Run("vertical-pod-autoscaler reads history from the platform tenant's monitoring", func(t *testing.T) {
		g := NewWithT(t)
		objs := render(t, "vertical-pod-autoscaler", nil)
		var args []any
		for k, o := range objs {
			if strings.HasPrefix(k, "Deployment/") && strings.Contains(k, "recommender") {
				args, _ = o.container(0)["args"].([]any)
			}
		}
		g.Expect(args).To(ContainElement("--prometheus-address=http://vmselect-shortterm.tenant-root.svc.cozy.local:8481/select/0/prometheus/"))
		g.Expect(args).To(ContainElement(`--metric-for-pod-labels=kube_pod_labels{job="kube-state-metrics", tenant="tenant-foo", cluster="kubernetes-foo"}[8d]`))
	})
	t.Run("gpu-operator loads the driver with its kernel module settings, and leaves the device plugin to HAMi", func(t *testing.T) {
		g := NewWithT(t)
		objs := render(t, "gpu-operator", nil)
		objs.must(t, "ConfigMap/nvidia-kernel-module-params")
		policy := find(t, objs, "ClusterPolicy")
		g.Expect(policy.get("spec", "driver", "kernelModuleConfig", "name")).To(Equal("nvidia-kernel-module-params"))
		g.Expect(policy.get("spec", "devicePlugin", "enabled")).To(BeTrue())
		policy = find(t, render(t, "gpu-operator", map[string]bool{"hami": true}), "ClusterPolicy")
		g.Expect(policy.get("spec", "devicePlugin", "enabled")).To(BeFalse())
	})
}

// kubernetesValues are the snapshot's packages/apps/kubernetes/values.yaml.
func kubernetesValues(t *testing.T) chartutil.Values {
	t.Helper()
	dir, err := CozystackDir()
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ReadValuesFile(filepath.Join(dir, "apps", "kubernetes", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// cozystackMapping renders manifests/cozystack's templates as they would
// run inside apps/kubernetes: with the snapshot's real values.yaml, the
// platform's _namespace and _cluster, and overrides.
func cozystackMapping(t *testing.T, overrides map[string]any) (*seederv1.TenantSeed, error) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	vals := kubernetesValues(t)
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "kubernetes", Version: "0.0.0"}, Values: vals}
	for _, name := range []string{"_tenant-operator.tpl", "tenantseed.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "manifests", "cozystack", "templates", name))
		if err != nil {
			t.Fatal(err)
		}
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + name, Data: raw})
	}
	platform := map[string]any{
		"_namespace":     map[string]any{"etcd": "tenant-root", "monitoring": "tenant-root"},
		"_cluster":       map[string]any{"cluster-domain": "cozy.local"},
		"tenantOperator": map[string]any{"version": "v0.1.0", "packages": map[string]any{"url": "oci://registry.example/cozystack-packages", "digest": "sha256:" + strings.Repeat("a", 64)}},
	}
	rel, err := renderAsKubernetesApp(ch, chartutil.CoalesceTables(overrides, platform))
	if err != nil {
		return nil, err
	}
	ts := &seederv1.TenantSeed{}
	if err := yaml.UnmarshalStrict([]byte(rel.Manifest[strings.Index(rel.Manifest, "apiVersion:"):]), ts); err != nil {
		t.Fatalf("the rendered TenantSeed does not fit the API: %v\n%s", err, rel.Manifest)
	}
	return ts, nil
}

// Cozystack's apps/kubernetes values, rendered into the TenantSeed the
// seeder applies: every addons.* key of the real values.yaml maps to the
// tenant bundle (or says why not), and what it maps to is what the bundle
// knows.
func TestCozystackMapping(t *testing.T) {
	vals := kubernetesValues(t)
	keys := []string{}
	for k := range vals["addons"].(map[string]any) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	catalogue, err := bundle.LoadAddons(bundles.FS, "tenant")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("defaults", func(t *testing.T) {
		g := NewWithT(t)
		ts, err := cozystackMapping(t, nil)
		g.Expect(err).NotTo(HaveOccurred())
		b := ts.Spec.Bundle
		g.Expect(b.Variant).To(Equal("kubevirt"))
		g.Expect(b.Cluster.APIEndpoint).To(Equal("kubernetes-foo.tenant-foo.svc:6443"))
		g.Expect(b.Platform).To(Equal(tenantv1.PlatformFacts{ClusterName: "kubernetes-foo", Namespace: "tenant-foo", MonitoringNamespace: "tenant-root", ClusterDomain: "cozy.local"}))
		g.Expect(b.Cloud.StorageClasses).To(Equal(map[string]tenantv1.StorageClass{
			"replicated": {InfraStorageClass: "replicated", Default: true}, "kubevirt": {InfraStorageClass: "replicated"}}))
		g.Expect(b.Packages.Digest).To(HavePrefix("sha256:"))
		choices := map[string]bundle.Choice{}
		for name, a := range b.Addons {
			choices[name] = bundle.Choice{Enabled: a.Enabled, Values: a.Values}
			g.Expect(*a.Enabled).To(BeFalse(), "%s: apps/kubernetes has every switchable addon off by default", name)
		}
		sel, err := catalogue.Select(choices)
		g.Expect(err).NotTo(HaveOccurred(), "the seeded addon choices name addons the bundle knows")
		var on []string
		for _, a := range sel.Enabled {
			on = append(on, a.Name)
		}
		g.Expect(on).To(ConsistOf("prometheus-operator-crds", "metrics-server"), "what Cozystack installs unconditionally")
	})

	t.Run("every addon on, each valuesOverride reaching its target", func(t *testing.T) {
		g := NewWithT(t)
		overrides := map[string]any{}
		hasOverride := map[string]bool{}
		for _, k := range keys {
			o := map[string]any{"enabled": true}
			if _, ok := vals["addons"].(map[string]any)[k].(map[string]any)["valuesOverride"]; ok {
				o["valuesOverride"] = map[string]any{"marker": k}
				hasOverride[k] = true
			}
			overrides[k] = o
		}
		ts, err := cozystackMapping(t, map[string]any{"addons": overrides})
		g.Expect(err).NotTo(HaveOccurred())
		raw, err := json.Marshal(ts.Spec.Bundle)
		g.Expect(err).NotTo(HaveOccurred())
		skipped := map[string]bool{"ingressNginx": true, "fluxcd": true, "ouroboros": true}
		for _, k := range keys {
			if !hasOverride[k] {
				continue
			}
			if skipped[k] {
				g.Expect(string(raw)).NotTo(ContainSubstring(`"marker":"`+k+`"`), k)
				continue
			}
			g.Expect(string(raw)).To(ContainSubstring(`"marker":"`+k+`"`), "addons.%s.valuesOverride reaches nothing", k)
		}
		g.Expect(ts.Spec.Bundle.Components).To(HaveKey("cilium"))
		g.Expect(ts.Spec.Bundle.Components).To(HaveKey("coredns"))
		for name, a := range ts.Spec.Bundle.Addons {
			g.Expect(catalogue.Get(name)).NotTo(BeNil(), "addon %s", name)
			g.Expect(*a.Enabled).To(BeTrue(), name)
		}
		g.Expect(ts.Spec.Bundle.Addons).To(HaveKey("vertical-pod-autoscaler"), "apps/kubernetes gates VPA on monitoringAgents")
		g.Expect(ts.Spec.Bundle.Cluster.GatewayAPI).To(BeTrue())
	})

	t.Run("an addon key the mapping does not know fails the render", func(t *testing.T) {
		_, err := cozystackMapping(t, map[string]any{"addons": map[string]any{"brandNew": map[string]any{"enabled": true}}})
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("addons.brandNew has no mapping")))
	})
}

// renderAsKubernetesApp renders ch offline as apps/kubernetes' release of a
// tenant "foo".
func renderAsKubernetesApp(ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "kubernetes-foo", "tenant-foo"
	return inst.Run(ch, vals)
}
