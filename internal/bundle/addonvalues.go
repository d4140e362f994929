package bundle

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cozystack/tenant-operator/internal/values"
)

// Platform facts: where the tenant sits on the Cozystack platform, which
// some addons talk to (monitoring-agents writes to the tenant's monitoring
// on the management side). They arrive through the TenantBundle, seeded.
const (
	FactClusterName           = "clusterName"
	FactTenantNamespace       = "tenantNamespace"
	FactMonitoringNamespace   = "monitoringNamespace"
	FactPlatformClusterDomain = "platformClusterDomain"
)

// PlatformFactFields names the TenantBundle field of each platform fact, for
// the message that says which one is missing.
var PlatformFactFields = map[string]string{
	FactClusterName:           "spec.platform.clusterName",
	FactTenantNamespace:       "spec.platform.namespace",
	FactMonitoringNamespace:   "spec.platform.monitoringNamespace",
	FactPlatformClusterDomain: "spec.platform.clusterDomain",
}

// MainValues computes the values of an addon's main component: the
// catalogue's values with ${fact} expanded, then those it takes while
// another addon is enabled or a boolean fact is true, then the values the
// TenantBundle gives the addon named by ValuesOf, then its own. The layers
// are the ones Cozystack's apps/kubernetes renders (defaults
// mergeOverwrite'd by addons.<name>.valuesOverride). It returns nil when
// there is nothing to set, and the facts it names but has no value for.
func (a *Addon) MainValues(facts Facts, enabled map[string]bool, choices map[string]Choice) (*apiextensionsv1.JSON, []string, error) {
	var missing []string
	expand := func(s string) string {
		return factRef.ReplaceAllStringFunc(s, func(ref string) string {
			name := factRef.FindStringSubmatch(ref)[1]
			v, _ := facts[name].(string)
			if v == "" {
				missing = append(missing, name)
			}
			return v
		})
	}
	layer := func(out, v map[string]any) map[string]any {
		return values.Merge(out, expandStrings(v, expand).(map[string]any))
	}
	// The base is copied, not merged: its nulls must reach Helm, where they
	// remove a chart default.
	out := map[string]any{}
	if a.Values != nil {
		out = expandStrings(a.Values, expand).(map[string]any)
	}
	for _, other := range slices.Sorted(maps.Keys(a.ValuesWhenEnabled)) {
		if enabled[other] {
			out = layer(out, a.ValuesWhenEnabled[other])
		}
	}
	for _, fact := range slices.Sorted(maps.Keys(a.ValuesIf)) {
		if facts.Bool(fact) {
			out = layer(out, a.ValuesIf[fact])
		}
	}
	for _, name := range []string{a.ValuesOf, a.Name} {
		c, ok := choices[name]
		if name == "" || !ok || c.Values == nil {
			continue
		}
		var given map[string]any
		if err := json.Unmarshal(c.Values.Raw, &given); err != nil {
			return nil, nil, fmt.Errorf("spec.addons.%s.values: must be an object: %w", name, err)
		}
		out = values.Merge(out, given)
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	if len(out) == 0 {
		return nil, missing, nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	return &apiextensionsv1.JSON{Raw: raw}, missing, nil
}

// MissingFactsMessage says which TenantBundle fields an addon needs.
func MissingFactsMessage(addon string, missing []string) string {
	fields := make([]string, 0, len(missing))
	for _, f := range missing {
		if field, ok := PlatformFactFields[f]; ok {
			fields = append(fields, field)
		} else {
			fields = append(fields, f)
		}
	}
	return fmt.Sprintf("addon %s needs %s, which the management side seeds", addon, strings.Join(fields, ", "))
}

// expandStrings copies v with every string passed through expand.
func expandStrings(v any, expand func(string) string) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = expandStrings(x, expand)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = expandStrings(x, expand)
		}
		return out
	case string:
		return expand(t)
	default:
		return t
	}
}
