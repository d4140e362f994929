package tenantbundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/source"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/bootstrap"
)

// plan resolves the bundle definition and the cluster facts of obj.
func (r *Reconciler) plan(obj *tenantv1.TenantBundle) (*bundle.Definition, []bundle.Component, bundle.Facts, error) {
	def, err := bundle.Load(r.Bundles, obj.Spec.Bundle)
	if err != nil {
		return nil, nil, nil, terminal(tenantv1.ReasonUnknownBundle, "spec.bundle: %v", err)
	}
	for name := range obj.Spec.Components {
		if def.Component(name) == nil {
			return nil, nil, nil, terminal(tenantv1.ReasonUnknownComponent,
				"spec.components.%s: bundle %q has no such component (it has: %s)", name, def.Name, componentNames(def))
		}
	}
	c := obj.Spec.Cluster
	facts, err := bundle.NewFacts(bundle.ClusterInput{APIEndpoint: c.APIEndpoint, PodCIDR: c.PodCIDR,
		ServiceCIDR: c.ServiceCIDR, ClusterDomain: c.ClusterDomain, DNSServiceIP: c.DNSServiceIP}, def.Settings)
	if err != nil {
		return nil, nil, nil, terminal(tenantv1.ReasonInvalidSpec, "%v", err)
	}
	comps, err := def.Plan(facts)
	if err != nil {
		return nil, nil, nil, terminal(tenantv1.ReasonUnknownBundle, "spec.bundle: %v", err)
	}
	var tenantSide []bundle.Component
	for _, c := range comps {
		if c.Placement == bundle.PlacementTenant {
			tenantSide = append(tenantSide, c)
		}
	}
	return def, tenantSide, facts, nil
}

func componentNames(def *bundle.Definition) string {
	names := make([]string, 0, len(def.Components))
	for _, c := range def.Components {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// pull fetches and verifies the packages artifact.
func (r *Reconciler) pull(ctx context.Context, obj *tenantv1.TenantBundle) (*source.Artifact, error) {
	p := obj.Spec.Packages
	ref := source.Ref{URL: p.URL, Tag: p.Tag, Digest: p.Digest, Insecure: p.Insecure}
	if p.PullSecretRef != nil {
		user, pass, err := r.pullCredentials(ctx, *p.PullSecretRef, p.URL)
		if err != nil {
			return nil, err
		}
		ref.Username, ref.Password = user, pass
	}
	art, err := r.Puller.Pull(ctx, ref)
	switch {
	case errors.Is(err, source.ErrDigestMismatch):
		return nil, terminal(tenantv1.ReasonDigestMismatch, "spec.packages: %v", err)
	case errors.Is(err, source.ErrInvalidArtifact):
		return nil, terminal(tenantv1.ReasonArtifactFailed, "spec.packages: %v", err)
	case err != nil:
		// A missing tag or an unreachable registry can heal: retry with backoff.
		return nil, retry(tenantv1.ReasonArtifactFailed, fmt.Errorf("spec.packages: %w", err))
	}
	return art, nil
}

// pullCredentials reads a dockerconfigjson Secret with the uncached reader:
// the operator does not watch Secrets, so none of them sits in its memory.
func (r *Reconciler) pullCredentials(ctx context.Context, ref tenantv1.SecretReference, url string) (string, string, error) {
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return "", "", retry(tenantv1.ReasonArtifactFailed, fmt.Errorf("spec.packages.pullSecretRef: %w", err))
	}
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
		return "", "", terminal(tenantv1.ReasonInvalidSpec, "spec.packages.pullSecretRef: %s/%s is not a dockerconfigjson Secret", ref.Namespace, ref.Name)
	}
	host := strings.SplitN(strings.TrimPrefix(url, "oci://"), "/", 2)[0]
	a, ok := cfg.Auths[host]
	if !ok {
		return "", "", terminal(tenantv1.ReasonInvalidSpec, "spec.packages.pullSecretRef: %s/%s has no credentials for %s", ref.Namespace, ref.Name, host)
	}
	return a.Username, a.Password, nil
}

// components builds each planned component's chart, values and digest.
func (r *Reconciler) components(obj *tenantv1.TenantBundle, planned []bundle.Component, facts bundle.Facts, tree string) ([]*bootstrap.Component, error) {
	out := make([]*bootstrap.Component, 0, len(planned))
	for _, c := range planned {
		override := map[string]any{}
		if o, ok := obj.Spec.Components[c.Name]; ok && o.Values != nil {
			if err := json.Unmarshal(o.Values.Raw, &override); err != nil {
				return nil, terminal(tenantv1.ReasonInvalidSpec, "spec.components.%s.values: must be an object: %v", c.Name, err)
			}
		}
		ch, err := helm.BuildFromTree(helm.TreeChart{Tree: tree, Path: c.Chart.Path,
			Libraries: c.Chart.Libraries, ValuesFiles: c.Chart.ValuesFiles})
		if err != nil {
			return nil, terminal(tenantv1.ReasonChartInvalid, "component %s: %v", c.Name, err)
		}
		vals := bundle.Values(c, facts, override)
		out = append(out, &bootstrap.Component{Def: c, Chart: ch, Values: vals, Digest: digest(ch.Digest, vals)})
	}
	return out, nil
}

func digest(chartDigest string, vals map[string]any) string {
	raw, _ := json.Marshal(vals) // maps marshal with sorted keys
	h := sha256.New()
	h.Write([]byte(chartDigest))
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil))[:32]
}
