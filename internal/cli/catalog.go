package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/strvals"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/seed"
	"github.com/cozystack/tenant-operator/internal/values"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
	"github.com/cozystack/tenant-operator/operator/packages"
)

// ConfirmManager owns spec.confirmPrivileged: apart from the install's
// intent, so that re-installing with other values neither drops nor
// repeats a confirmation (a changed rendering needs a new one anyway).
const ConfirmManager = "kubectl-tenant-confirm"

// Catalog runs `kubectl tenant catalog` subcommands: apps are Packages of
// catalog PackageSources (every PackageSource that is not an addon's).
type Catalog struct {
	Client client.Client
	Out    io.Writer
	// Wait bounds how long a change waits for the operator; zero returns
	// right after writing.
	Wait time.Duration
}

// InstallOptions are the choices of `catalog install`.
type InstallOptions struct {
	Variant    string
	Component  string   // whose values --values and --set give; default: the only one
	ValueFiles []string // YAML files, merged in order
	Set        []string // key=value, Helm's --set syntax, over the files
	// ConfirmPrivileged confirms the privileges the operator finds, after
	// printing them, instead of stopping to ask.
	ConfirmPrivileged bool
}

// List prints every catalog app with its installation state.
func (c *Catalog) List(ctx context.Context) error {
	var sources cozyv1.PackageSourceList
	if err := c.Client.List(ctx, &sources); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREGISTERED BY\tVARIANTS\tINSTALLED\tREADY\tPRIVILEGED\tMESSAGE")
	for _, ps := range sources.Items {
		if ps.Labels[tenantv1.AddonLabel] != "" {
			continue
		}
		by := "tenant"
		if ps.Labels[tenantv1.CatalogLabel] != "" {
			by = "management"
		}
		var variants []string
		for _, v := range ps.Spec.Variants {
			variants = append(variants, v.Name)
		}
		installed, ready, priv, msg := "-", "-", "-", ""
		pkg := &cozyv1.Package{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: ps.Name}, pkg); err == nil {
			installed = variantOf(pkg)
			if cond := apimeta.FindStatusCondition(pkg.Status.Conditions, meta.ReadyCondition); cond != nil {
				ready, msg = string(cond.Status), cond.Reason+": "+cond.Message
			}
			if p := pkg.Status.Privileged; p != nil {
				priv = map[bool]string{true: "confirmed", false: "unconfirmed"}[p.Confirmed]
			}
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ps.Name, by, strings.Join(variants, ","), installed, ready, priv, msg)
	}
	return tw.Flush()
}

func variantOf(pkg *cozyv1.Package) string {
	if pkg.Spec.Variant == "" {
		return packages.DefaultVariant
	}
	return pkg.Spec.Variant
}

// Install creates or updates the app's Package and waits until it is Ready,
// refused, or waiting for a confirmation of its privileges.
func (c *Catalog) Install(ctx context.Context, app string, o InstallOptions) error {
	ps := &cozyv1.PackageSource{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: app}, ps); err != nil {
		return fmt.Errorf("catalog app %s: %w", app, err)
	}
	if ps.Labels[tenantv1.AddonLabel] != "" {
		return fmt.Errorf("%s is an addon: use `kubectl tenant addons enable %s`", app, ps.Labels[tenantv1.AddonLabel])
	}
	// The request makes the operator look again even when the spec is
	// unchanged (a PackageSource moved to a new chart, say), and tells this
	// client when the status is about the catalog as it is now.
	token := time.Now().UTC().Format(time.RFC3339Nano)
	pkg := &cozyv1.Package{
		TypeMeta: metav1.TypeMeta{APIVersion: cozyv1.GroupVersion.String(), Kind: "Package"},
		ObjectMeta: metav1.ObjectMeta{Name: app,
			Annotations: map[string]string{meta.ReconcileRequestAnnotation: token}},
		Spec: cozyv1.PackageSpec{Variant: o.Variant},
	}
	vals, err := readValues(o.ValueFiles, o.Set)
	if err != nil {
		return err
	}
	if len(vals) > 0 {
		comp, err := valuesComponent(ps, o.Variant, o.Component)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(vals)
		if err != nil {
			return err
		}
		pkg.Spec.Components = map[string]cozyv1.PackageComponent{comp: {Values: &apiextensionsv1.JSON{Raw: raw}}}
	}
	u, err := apply.ToUnstructured(pkg)
	if err != nil {
		return err
	}
	if err := c.Client.Patch(ctx, u, client.Apply, client.FieldOwner(seed.CLIManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("Package %s: %w", app, err)
	}
	if c.Wait == 0 {
		return nil
	}
	return c.settle(ctx, app, token, o.ConfirmPrivileged)
}

// settle waits for the operator's verdict and, when asked to, confirms the
// privileges it found once, showing them.
func (c *Catalog) settle(ctx context.Context, app, token string, confirm bool) error {
	pkg, err := c.verdict(ctx, app, token)
	if err != nil {
		return err
	}
	stalled := apimeta.FindStatusCondition(pkg.Status.Conditions, meta.StalledCondition)
	if stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.Reason == packages.ReasonPrivilegedNotConfirmed && confirm {
		if err := c.confirm(ctx, pkg); err != nil {
			return err
		}
		if pkg, err = c.verdict(ctx, app, ""); err != nil {
			return err
		}
	}
	return c.report(pkg)
}

// Confirm confirms the privileges the operator found in the app's current
// rendering (printed first), by their fingerprint.
func (c *Catalog) Confirm(ctx context.Context, app string) error {
	pkg, err := c.verdict(ctx, app, "")
	if err != nil {
		return err
	}
	if pkg.Status.Privileged == nil {
		return fmt.Errorf("%s renders nothing privileged: there is nothing to confirm", app)
	}
	if err := c.confirm(ctx, pkg); err != nil {
		return err
	}
	if c.Wait == 0 {
		return nil
	}
	if pkg, err = c.verdict(ctx, app, ""); err != nil {
		return err
	}
	return c.report(pkg)
}

func (c *Catalog) confirm(ctx context.Context, pkg *cozyv1.Package) error {
	p := pkg.Status.Privileged
	fmt.Fprintf(c.Out, "confirming that %s may be privileged (%s):\n", pkg.Name, p.Fingerprint)
	for _, f := range p.Findings {
		fmt.Fprintln(c.Out, "  "+f)
	}
	patch := &cozyv1.Package{
		TypeMeta:   metav1.TypeMeta{APIVersion: cozyv1.GroupVersion.String(), Kind: "Package"},
		ObjectMeta: metav1.ObjectMeta{Name: pkg.Name},
		Spec:       cozyv1.PackageSpec{ConfirmPrivileged: p.Fingerprint},
	}
	u, err := apply.ToUnstructured(patch)
	if err != nil {
		return err
	}
	// Only the confirmation: the rest of the spec is the install's.
	u.Object["spec"] = map[string]any{"confirmPrivileged": p.Fingerprint}
	return c.Client.Patch(ctx, u, client.Apply, client.FieldOwner(ConfirmManager), client.ForceOwnership)
}

// verdict waits until the operator has handled the Package's spec (and the
// reconcile request token, when given) and it is Ready, Stalled, or failed
// in Flux; still installing when c.Wait runs out is an error that says what
// it waits for.
func (c *Catalog) verdict(ctx context.Context, app, token string) (*cozyv1.Package, error) {
	pkg := &cozyv1.Package{}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, c.Wait, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKey{Name: app}, pkg); err != nil {
			return false, err
		}
		ready := apimeta.FindStatusCondition(pkg.Status.Conditions, meta.ReadyCondition)
		if pkg.Status.ObservedGeneration < pkg.Generation || ready == nil ||
			(token != "" && pkg.Status.LastHandledReconcileAt != token) {
			return false, nil
		}
		return ready.Status == metav1.ConditionTrue || apimeta.IsStatusConditionTrue(pkg.Status.Conditions, meta.StalledCondition) ||
			ready.Reason == helmv2.InstallFailedReason || ready.Reason == helmv2.UpgradeFailedReason, nil
	})
	if err != nil {
		msg := "not reconciled yet"
		if ready := apimeta.FindStatusCondition(pkg.Status.Conditions, meta.ReadyCondition); ready != nil {
			msg = ready.Reason + ": " + ready.Message
		}
		return nil, fmt.Errorf("%s is not Ready after %s: %s", app, c.Wait, msg)
	}
	return pkg, nil
}

func (c *Catalog) report(pkg *cozyv1.Package) error {
	ready := apimeta.FindStatusCondition(pkg.Status.Conditions, meta.ReadyCondition)
	if ready.Status == metav1.ConditionTrue {
		fmt.Fprintf(c.Out, "%s is Ready: %s\n", pkg.Name, ready.Message)
		return nil
	}
	return fmt.Errorf("%s: %s: %s", pkg.Name, ready.Reason, ready.Message)
}

// Uninstall deletes the app's Package and waits until its releases are
// gone (helm-controller uninstalls them).
func (c *Catalog) Uninstall(ctx context.Context, app string) error {
	pkg := &cozyv1.Package{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: app}, pkg); err != nil {
		return fmt.Errorf("catalog app %s: %w", app, err)
	}
	if pkg.Labels[tenantv1.AddonLabel] != "" {
		return fmt.Errorf("%s is an addon: use `kubectl tenant addons disable %s`", app, pkg.Labels[tenantv1.AddonLabel])
	}
	if err := c.Client.Delete(ctx, pkg); client.IgnoreNotFound(err) != nil {
		return err
	}
	if c.Wait == 0 {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, c.Wait, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKey{Name: app}, &cozyv1.Package{}); !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
		var hrs helmv2.HelmReleaseList
		if err := c.Client.List(ctx, &hrs, client.MatchingLabels{packages.PackageLabel: app}); err != nil {
			return false, err
		}
		return len(hrs.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be uninstalled: %w", app, err)
	}
	fmt.Fprintf(c.Out, "%s uninstalled\n", app)
	return nil
}

// valuesComponent is the component that values go to: the named one, or
// the variant's only installable component.
func valuesComponent(ps *cozyv1.PackageSource, variant, named string) (string, error) {
	if variant == "" {
		variant = packages.DefaultVariant
	}
	for _, v := range ps.Spec.Variants {
		if v.Name != variant {
			continue
		}
		var installable []string
		for _, comp := range v.Components {
			if comp.Install != nil {
				installable = append(installable, comp.Name)
			}
		}
		switch {
		case named != "":
			for _, n := range installable {
				if n == named {
					return n, nil
				}
			}
			return "", fmt.Errorf("variant %s of %s has no installable component %q (has: %s)", variant, ps.Name, named, strings.Join(installable, ", "))
		case len(installable) == 1:
			return installable[0], nil
		default:
			return "", fmt.Errorf("variant %s of %s has components %s: say which one the values are for with --component", variant, ps.Name, strings.Join(installable, ", "))
		}
	}
	return "", fmt.Errorf("%s has no variant %q", ps.Name, variant)
}

// readValues merges the files in order, then --set over them, as helm does.
func readValues(files, set []string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var v map[string]any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = values.Merge(out, v)
	}
	for _, s := range set {
		if err := strvals.ParseInto(s, out); err != nil {
			return nil, fmt.Errorf("--set %s: %w", s, err)
		}
	}
	return out, nil
}
