// Package cli is `kubectl tenant`: what tenant admins (and the management
// side) run against a tenant cluster. Commands change the TenantBundle with
// server-side apply under their own field manager and read state back from
// status; the operator does the work.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/bundles"
	"github.com/cozystack/tenant-operator/internal/apply"
	"github.com/cozystack/tenant-operator/internal/bundle"
	"github.com/cozystack/tenant-operator/internal/seed"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// Addons runs `kubectl tenant addons` subcommands against one TenantBundle.
type Addons struct {
	Client client.Client
	Bundle string // TenantBundle name
	Out    io.Writer
	// Wait bounds how long a change waits for the operator's verdict;
	// zero returns right after writing.
	Wait time.Duration
}

func (a *Addons) load(ctx context.Context) (*tenantv1.TenantBundle, *bundle.Addons, error) {
	tb := &tenantv1.TenantBundle{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: a.Bundle}, tb); err != nil {
		return nil, nil, fmt.Errorf("TenantBundle %s: %w", a.Bundle, err)
	}
	cat, err := bundle.LoadAddons(bundles.FS, tb.Spec.Bundle)
	if err != nil {
		return nil, nil, err
	}
	return tb, cat, nil
}

// List prints every addon with its state, who chose it, and its health.
func (a *Addons) List(ctx context.Context) error {
	tb, cat, err := a.load(ctx)
	if err != nil {
		return err
	}
	sel, selErr := cat.Select(choices(tb.Spec.Addons))
	enabled := map[string]bool{}
	if selErr == nil {
		for _, ad := range sel.Enabled {
			enabled[ad.Name] = true
		}
	}
	owners := addonOwners(tb)
	tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tENABLED\tCHOSEN BY\tREADY\tMESSAGE")
	for i := range cat.Addons {
		ad := &cat.Addons[i]
		by := "default"
		if o := owners[ad.Name]; o != "" {
			by = o
		} else if selErr == nil && enabled[ad.Name] && !ad.Default {
			by = "dependency"
		}
		ready, msg := "-", ""
		if enabled[ad.Name] {
			ready, msg = a.health(ctx, ad)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\n", ad.Name, enabled[ad.Name], by, ready, msg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if selErr != nil {
		return fmt.Errorf("the current choices are refused: %w", selErr)
	}
	return nil
}

func (a *Addons) health(ctx context.Context, ad *bundle.Addon) (string, string) {
	pkg := &cozyv1.Package{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: ad.PackageName()}, pkg); err != nil {
		return "Unknown", "not created yet"
	}
	c := apimeta.FindStatusCondition(pkg.Status.Conditions, meta.ReadyCondition)
	if c == nil {
		return "Unknown", "not reconciled yet"
	}
	return string(c.Status), c.Message
}

// Enable switches an addon on (and, implicitly, what it depends on).
func (a *Addons) Enable(ctx context.Context, name string) error {
	return a.change(ctx, name, func(s *tenantv1.AddonSpec) { s.Enabled = ptrTo(true) })
}

// Disable switches an addon off; refused while an enabled addon needs it.
func (a *Addons) Disable(ctx context.Context, name string) error {
	return a.change(ctx, name, func(s *tenantv1.AddonSpec) { s.Enabled = ptrTo(false) })
}

// Set replaces an addon's values.
func (a *Addons) Set(ctx context.Context, name, values string) error {
	var v map[string]any
	if err := json.Unmarshal([]byte(values), &v); err != nil {
		return fmt.Errorf("values of %s must be a JSON or YAML object: %w", name, err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return a.change(ctx, name, func(s *tenantv1.AddonSpec) { s.Values = &apiextensionsv1.JSON{Raw: raw} })
}

// change checks the new choice against the catalogue the way the operator
// will, then applies only that addon's field as the tenant admin.
func (a *Addons) change(ctx context.Context, name string, edit func(*tenantv1.AddonSpec)) error {
	tb, cat, err := a.load(ctx)
	if err != nil {
		return err
	}
	if cat.Get(name) == nil {
		return fmt.Errorf("unknown addon %q; known: %s", name, strings.Join(cat.Names(), ", "))
	}
	next := map[string]tenantv1.AddonSpec{}
	for k, v := range tb.Spec.Addons {
		next[k] = v
	}
	mine := tenantv1.AddonSpec{}
	edit(&mine)
	merged := next[name]
	if mine.Enabled != nil {
		merged.Enabled = mine.Enabled
	}
	if mine.Values != nil {
		merged.Values = mine.Values
	}
	next[name] = merged
	if _, err := cat.Select(choices(next)); err != nil {
		var refused *bundle.RefusedError
		if errors.As(err, &refused) {
			return errors.New(refused.Message)
		}
		return err
	}
	patch := &tenantv1.TenantBundle{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenantv1.GroupVersion.String(), Kind: "TenantBundle"},
		ObjectMeta: metav1.ObjectMeta{Name: tb.Name},
		Spec:       tenantv1.TenantBundleSpec{Addons: ownIntent(tb)},
	}
	own := patch.Spec.Addons[name]
	if mine.Enabled != nil {
		own.Enabled = mine.Enabled
	}
	if mine.Values != nil {
		own.Values = mine.Values
	}
	patch.Spec.Addons[name] = own
	u, err := apply.ToUnstructured(patch)
	if err != nil {
		return err
	}
	// Only this manager's addon fields: the rest of the spec belongs to
	// others, and an apply must neither claim nor clear it.
	spec := map[string]any{"addons": u.Object["spec"].(map[string]any)["addons"]}
	u.Object["spec"] = spec
	if err := a.Client.Patch(ctx, u, client.Apply, client.FieldOwner(seed.CLIManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("TenantBundle %s: %w", tb.Name, err)
	}
	if a.Wait == 0 {
		return nil
	}
	return a.verdict(ctx, cat.Get(name), u.GetGeneration())
}

// verdict waits until the operator has handled the change and returns its
// refusal, if any: the TenantBundle Stalled, or the addon's Package
// Stalled (values its chart's schema rejects). It does not wait for the
// install itself; `addons list` shows that.
func (a *Addons) verdict(ctx context.Context, ad *bundle.Addon, generation int64) error {
	var refusal error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, a.Wait, true, func(ctx context.Context) (bool, error) {
		tb := &tenantv1.TenantBundle{}
		if err := a.Client.Get(ctx, client.ObjectKey{Name: a.Bundle}, tb); err != nil {
			return false, err
		}
		if tb.Status.ObservedGeneration < generation {
			return false, nil
		}
		// The addons controller is a controller of its own: until its
		// condition speaks for this generation, the Package may still hold
		// the previous values and their verdict.
		ac := apimeta.FindStatusCondition(tb.Status.Conditions, tenantv1.AddonsReadyCondition)
		if ac == nil || ac.ObservedGeneration < generation {
			return false, nil
		}
		if ac.Status == metav1.ConditionFalse && tenantv1.IsAddonRefusal(ac.Reason) {
			refusal = fmt.Errorf("refused by the operator: %s: %s", ac.Reason, ac.Message)
			return true, nil
		}
		if c := apimeta.FindStatusCondition(tb.Status.Conditions, meta.StalledCondition); c != nil && c.Status == metav1.ConditionTrue {
			refusal = fmt.Errorf("refused by the operator: %s: %s", c.Reason, c.Message)
			return true, nil
		}
		pkg := &cozyv1.Package{}
		if err := a.Client.Get(ctx, client.ObjectKey{Name: ad.PackageName()}, pkg); err != nil {
			// Disabled, or held until the network tier is Ready.
			return true, client.IgnoreNotFound(err)
		}
		if pkg.Status.ObservedGeneration < pkg.Generation {
			return false, nil
		}
		if c := apimeta.FindStatusCondition(pkg.Status.Conditions, meta.StalledCondition); c != nil && c.Status == metav1.ConditionTrue {
			refusal = fmt.Errorf("refused by the operator: %s: %s", c.Reason, c.Message)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the operator to handle the change: %w", err)
	}
	return refusal
}

// ownIntent is every addon field this CLI set before, with its current
// value: server-side apply removes the fields a manager owned but leaves
// out of its next apply, so each apply restates the whole intent.
func ownIntent(tb *tenantv1.TenantBundle) map[string]tenantv1.AddonSpec {
	out := map[string]tenantv1.AddonSpec{}
	for key, managers := range seed.AddonFieldOwners(tb.ManagedFields) {
		if !slices.Contains(managers, seed.CLIManager) {
			continue
		}
		name, field, _ := strings.Cut(key, "/")
		cur, spec := tb.Spec.Addons[name], out[name]
		switch field {
		case "enabled":
			spec.Enabled = cur.Enabled
		case "values":
			spec.Values = cur.Values
		}
		out[name] = spec
	}
	return out
}

func choices(spec map[string]tenantv1.AddonSpec) map[string]bundle.Choice {
	out := map[string]bundle.Choice{}
	for k, v := range spec {
		out[k] = bundle.Choice{Enabled: v.Enabled, Values: v.Values}
	}
	return out
}

// addonOwners names who set each addon's enabled field: "management"
// for the seed, "tenant (<manager>)" for anyone else.
func addonOwners(tb *tenantv1.TenantBundle) map[string]string {
	out := map[string]string{}
	for key, managers := range seed.AddonFieldOwners(tb.ManagedFields) {
		name, ok := strings.CutSuffix(key, "/enabled")
		if !ok || len(managers) == 0 {
			continue
		}
		sort.Strings(managers)
		who := "management"
		if managers[0] != seed.SeedManager {
			who = "tenant (" + managers[0] + ")"
		}
		out[name] = who
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
