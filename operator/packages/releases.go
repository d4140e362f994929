package packages

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// Timings of the generated HelmReleases. Installs retry on failure
// instead of rolling back: a system chart that cannot install yet (no
// nodes, a dependency's webhook still starting) must keep trying. The
// interval and the 10-minute action timeout are those Cozystack's
// apps/kubernetes sets on every tenant HelmRelease.
const (
	releaseInterval = 5 * time.Minute
	releaseTimeout  = 10 * time.Minute
	retryInterval   = 30 * time.Second
	maxHistory      = 5
)

// release is one installable component of the Package.
type release struct {
	Component cozyv1.Component
	HR        *helmv2.HelmRelease
	EA        *sourcev1.ExternalArtifact
	Artifact  *meta.Artifact
	Chart     *helm.Chart
	// Values are the Package's inline values for the component.
	Values map[string]any
	// classified says what its rendering does that is privileged: the
	// findings, whether a pod needs a privileged namespace, what it needs
	// rights on beyond its namespace (see classify).
	classified
}

// Privileged says whether the component needs a confirmation: it declares
// so, or its rendering does something only a confirmation allows.
func (rel *release) Privileged() bool {
	return rel.Component.Install.Privileged || len(rel.Findings) > 0
}

// PrivilegedNamespace says whether the component's namespace must allow
// privileged pods: it declares so, or a pod it renders needs it.
func (rel *release) PrivilegedNamespace() bool {
	return rel.Component.Install.Privileged || rel.Pods
}

// desired computes the releases of the Package: every component with
// install that the Package does not disable.
func (r *Reconciler) desired(ctx context.Context, pkg *cozyv1.Package, ps *cozyv1.PackageSource, v *cozyv1.Variant, t *tree) ([]*release, error) {
	var out []*release
	byComponent := map[string]*release{}
	for _, c := range v.Components {
		if c.Install == nil {
			continue
		}
		if pc, ok := pkg.Spec.Components[c.Name]; ok && pc.Enabled != nil && !*pc.Enabled {
			continue
		}
		if c.Install.Namespace == "" {
			return nil, outcome.Terminal(ReasonInvalidConfiguration, "PackageSource %s: variant %s: component %s: install.namespace is required", ps.Name, v.Name, c.Name)
		}
		if rn := releaseName(c); r.BootstrapReleases.Has(c.Install.Namespace + "/" + rn) {
			return nil, outcome.Terminal(ReasonInvalidConfiguration, "PackageSource %s: variant %s: component %s: release %s/%s is the bootstrap tier's own; install it under another name",
				ps.Name, v.Name, c.Name, c.Install.Namespace, rn)
		}
		rel, err := r.build(pkg, ps, v, c, t)
		if err != nil {
			return nil, err
		}
		out = append(out, rel)
		byComponent[c.Name] = rel
	}
	for _, rel := range out {
		for _, d := range rel.Component.Install.DependsOn {
			dep, ok := byComponent[d]
			if !ok {
				return nil, outcome.Terminal(ReasonDependsOnFailed, "PackageSource %s: variant %s: component %s depends on %q, which is not an enabled installable component",
					ps.Name, v.Name, rel.Component.Name, d)
			}
			rel.HR.Spec.DependsOn = append(rel.HR.Spec.DependsOn, helmv2.DependencyReference{Name: dep.HR.Name, Namespace: dep.HR.Namespace})
		}
	}
	// Across packages Flux's dependsOn is only a safety net: this
	// controller already waited for the dependencies to be Ready.
	for _, dep := range activeDependencies(pkg, v) {
		var list helmv2.HelmReleaseList
		if err := r.List(ctx, &list, client.MatchingLabels{PackageLabel: dep}); err != nil {
			return nil, outcome.Retry(ReasonInternalError, err)
		}
		for _, rel := range out {
			for _, hr := range list.Items {
				rel.HR.Spec.DependsOn = append(rel.HR.Spec.DependsOn, helmv2.DependencyReference{Name: hr.Name, Namespace: hr.Namespace})
			}
		}
	}
	return out, nil
}

// build makes the chart artifact and the HelmRelease of one component.
func (r *Reconciler) build(pkg *cozyv1.Package, ps *cozyv1.PackageSource, v *cozyv1.Variant, c cozyv1.Component, t *tree) (*release, error) {
	values := map[string]any{}
	var raw *apiextensionsv1.JSON
	if pc, ok := pkg.Spec.Components[c.Name]; ok && pc.Values != nil {
		raw = pc.Values
		if err := json.Unmarshal(pc.Values.Raw, &values); err != nil {
			return nil, outcome.Terminal(ReasonValuesRejected, "spec.components.%s.values: %v", c.Name, err)
		}
	}
	name := artifactName(ps.Name, v.Name, c.Name)
	b, err := r.chartArtifact(t, v, c, name, values)
	if err != nil {
		return nil, err
	}
	ns := c.Install.Namespace
	rn := releaseName(c)
	labels := map[string]string{PackageLabel: pkg.Name}
	hr := &helmv2.HelmRelease{
		TypeMeta: metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: rn, Namespace: ns, Labels: labels,
			Annotations:     map[string]string{ValuesFilesAnnotation: strings.Join(c.ValuesFiles, ",")},
			OwnerReferences: []metav1.OwnerReference{ownerRef(pkg)},
		},
		Spec: helmv2.HelmReleaseSpec{
			ReleaseName: rn,
			ChartRef:    &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: name, Namespace: ns},
			Interval:    metav1.Duration{Duration: releaseInterval},
			Timeout:     &metav1.Duration{Duration: releaseTimeout},
			MaxHistory:  ptr.To(maxHistory),
			Install: &helmv2.Install{
				CRDs:     helmv2.CreateReplace,
				Strategy: &helmv2.InstallStrategy{Name: string(helmv2.ActionStrategyRetryOnFailure), RetryInterval: &metav1.Duration{Duration: retryInterval}},
			},
			Upgrade: &helmv2.Upgrade{
				Strategy: &helmv2.UpgradeStrategy{Name: string(helmv2.ActionStrategyRetryOnFailure), RetryInterval: &metav1.Duration{Duration: retryInterval}},
			},
			Values: raw,
		},
	}
	if c.Install.UpgradeCRDs != "" {
		hr.Spec.Upgrade.CRDs = helmv2.CRDsPolicy(c.Install.UpgradeCRDs)
	}
	if ps.Annotations[SkipValuesAnnotation] != "true" {
		hr.Spec.ValuesFrom = []helmv2.ValuesReference{{Kind: "Secret", Name: ValuesSecret}}
	}
	for _, h := range c.Install.HealthCheckExprs {
		hr.Spec.HealthCheckExprs = append(hr.Spec.HealthCheckExprs, kustomize.CustomHealthCheck{
			APIVersion: h.APIVersion, Kind: h.Kind,
			HealthCheckExpressions: kustomize.HealthCheckExpressions{Current: h.Current, InProgress: h.InProgress, Failed: h.Failed},
		})
	}
	strategy := c.Install.WaitStrategy
	if strategy == "" && len(hr.Spec.HealthCheckExprs) > 0 {
		strategy = string(helmv2.WaitStrategyPoller)
	}
	if strategy != "" {
		hr.Spec.WaitStrategy = &helmv2.WaitStrategy{Name: helmv2.WaitStrategyName(strategy)}
	}
	ea := &sourcev1.ExternalArtifact{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.ExternalArtifactKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: []metav1.OwnerReference{ownerRef(pkg)}},
		Spec: sourcev1.ExternalArtifactSpec{SourceRef: &meta.NamespacedObjectKindReference{
			APIVersion: cozyv1.GroupVersion.String(), Kind: "Package", Name: pkg.Name,
		}},
	}
	return &release{Component: c, HR: hr, EA: ea, Artifact: b.artifact, Chart: b.chart, Values: values}, nil
}

// releaseName is the Helm release of a component: install.releaseName,
// else the component's name.
func releaseName(c cozyv1.Component) string {
	if c.Install.ReleaseName != "" {
		return c.Install.ReleaseName
	}
	return c.Name
}

// artifactName is Cozystack's name for a component's chart artifact.
func artifactName(ps, variant, component string) string {
	return strings.ReplaceAll(fmt.Sprintf("%s-%s-%s", ps, variant, component), ".", "-")
}

func ownerRef(pkg *cozyv1.Package) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: cozyv1.GroupVersion.String(), Kind: "Package", Name: pkg.Name, UID: pkg.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}
