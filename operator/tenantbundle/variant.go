package tenantbundle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/outcome"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// resolveVariant decides the cloud variant. It returns the variant to plan
// with (nil while undecided: the network tier proceeds without it) and a
// terminal error when the nodes or the spec contradict each other. On a
// refused change the recorded variant is still returned, so what is
// installed keeps being reconciled and nothing is removed.
func (r *Reconciler) resolveVariant(ctx context.Context, obj *tenantv1.TenantBundle, nodes []corev1.Node) (*bundle.Variant, error) {
	det := bundle.DetectVariant(r.detectable(), nodeInfos(nodes))
	want := obj.Spec.Variant
	recorded := obj.Status.Variant
	var chosen, how string
	switch {
	case det.Mixed != nil:
		conditions.MarkFalse(obj, tenantv1.VariantResolvedCondition, tenantv1.ReasonMixedBackends, "%s", det.MixedMessage())
		return r.Variants[recorded], outcome.Terminal(tenantv1.ReasonMixedBackends,
			"nodes of several backends (%s): mixed clusters are not supported, no variant is installed", det.MixedMessage())
	case want != "" && want != "auto":
		if r.Variants[want] == nil {
			return r.Variants[recorded], outcome.Terminal(tenantv1.ReasonUnknownVariant, "spec.variant: no variant %q (known: auto, %s)", want, r.variantNames())
		}
		if det.Variant != "" && det.Variant != want {
			return r.Variants[recorded], outcome.Terminal(tenantv1.ReasonVariantMismatch,
				"spec.variant is %q but the nodes are %q", want, det.Variant)
		}
		chosen, how = want, "from spec.variant"
	case det.Variant != "":
		chosen, how = det.Variant, "detected from the nodes"
	case recorded != "":
		chosen, how = recorded, "recorded earlier; the nodes give no signal now"
	default:
		conditions.MarkUnknown(obj, tenantv1.VariantResolvedCondition, tenantv1.ReasonVariantUnknown, "%s", det.Unknown)
		return nil, nil
	}
	if recorded != "" && chosen != recorded {
		return r.Variants[recorded], outcome.Terminal(tenantv1.ReasonBackendChange,
			"the cluster runs variant %q and the requested one is %q (%s): changing the backend of a running cluster is refused, nothing was removed",
			recorded, chosen, how)
	}
	obj.Status.Variant = chosen
	conditions.MarkTrue(obj, tenantv1.VariantResolvedCondition, tenantv1.ReasonVariantResolved, "%s (%s)", chosen, how)
	return r.Variants[chosen], nil
}

// detectable are the variants with a detection rule.
func (r *Reconciler) detectable() map[string]*bundle.Variant {
	out := map[string]*bundle.Variant{}
	for name, v := range r.Variants {
		if v.Detect.Backend != "" || len(v.Detect.ProviderIDSchemes) > 0 {
			out[name] = v
		}
	}
	return out
}

func (r *Reconciler) variantNames() string {
	names := make([]string, 0, len(r.Variants))
	for name := range r.Variants {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func nodeInfos(nodes []corev1.Node) []bundle.NodeInfo {
	out := make([]bundle.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, bundle.NodeInfo{Name: n.Name, Backend: n.Labels[bundle.BackendLabel], ProviderID: n.Spec.ProviderID})
	}
	return out
}

// waitingForEffects lists what the platform's parts of the variant (or the
// tenant's CCM) have not done yet on the nodes.
func waitingForEffects(v *bundle.Variant, nodes []corev1.Node) string {
	var waiting []string
	for _, effect := range v.WaitFor {
		var pending []string
		for _, n := range nodes {
			switch effect {
			case bundle.EffectProviderID:
				scheme, _, _ := strings.Cut(n.Spec.ProviderID, "://")
				if n.Spec.ProviderID == "" || !contains(v.Detect.ProviderIDSchemes, scheme) {
					pending = append(pending, n.Name)
				}
			case bundle.EffectInitialized:
				if uninitialized(&n) {
					pending = append(pending, n.Name)
				}
			}
		}
		switch {
		case len(nodes) == 0:
			waiting = append(waiting, fmt.Sprintf("%s: no nodes yet", effect))
		case len(pending) > 0:
			sort.Strings(pending)
			msg := fmt.Sprintf("%s on nodes %s", effect, strings.Join(pending, ", "))
			if by := v.ProvidedBy(effect); by != "" {
				msg += " (from " + by + ", run by the platform)"
			}
			waiting = append(waiting, msg)
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	return "waiting for " + strings.Join(waiting, "; ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkCredentials verifies the credentials Secret is referenced, lives
// where its consumers run, and exists. Only its metadata is read.
func (r *Reconciler) checkCredentials(ctx context.Context, obj *tenantv1.TenantBundle, v *bundle.Variant) (string, error) {
	if v == nil || v.Credentials == nil {
		return "", nil
	}
	ref := obj.Spec.Cloud.CredentialsSecretRef
	if ref == nil {
		return "", outcome.Terminal(tenantv1.ReasonInvalidSpec, "spec.cloud.credentialsSecretRef: variant %q needs the tenant's cloud credentials Secret", v.Name)
	}
	if ref.Namespace != v.Credentials.Namespace {
		return "", outcome.Terminal(tenantv1.ReasonInvalidSpec,
			"spec.cloud.credentialsSecretRef: must be in namespace %s, where the %s components mount it (Secrets are never copied)", v.Credentials.Namespace, v.Name)
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return "", outcome.Retry(tenantv1.ReasonInvalidSpec, fmt.Errorf("spec.cloud.credentialsSecretRef: Secret %s/%s not found", ref.Namespace, ref.Name))
		}
		return "", err
	}
	return ref.Name, nil
}

// uninitialized reports the taint a kubelet with an external cloud provider
// starts with and the cloud controller manager lifts.
func uninitialized(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == uninitializedTaint })
}
