package bundle

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cozystack/tenant-operator/internal/values"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
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

// ReasonMissingPlatformFacts: an enabled addon needs a platform fact the
// TenantBundle does not have.
const ReasonMissingPlatformFacts = tenantv1.ReasonMissingPlatformFacts

// MainValues computes the values of an addon's main component: the
// catalogue's values with ${fact} expanded, then those it takes while
// another addon is enabled or a boolean fact is "true", then the values the TenantBundle gives the
// addon named by ValuesOf, then its own. The layers are the ones
// Cozystack's apps/kubernetes renders (defaults mergeOverwrite'd by
// addons.<name>.valuesOverride). It returns nil when there is nothing to
// set, and the facts it needs but does not have.
func (a *Addon) MainValues(facts map[string]string, enabled map[string]bool, choices map[string]Choice) (*apiextensionsv1.JSON, []string, error) {
	var missing []string
	expand := func(s string) string {
		return factRef.ReplaceAllStringFunc(s, func(ref string) string {
			name := factRef.FindStringSubmatch(ref)[1]
			v, ok := facts[name]
			if !ok || v == "" {
				missing = append(missing, name)
			}
			return v
		})
	}
	out := map[string]any{}
	if a.Values != nil {
		out = expandStrings(a.Values, expand).(map[string]any)
	}
	others := make([]string, 0, len(a.ValuesWhenEnabled))
	for other := range a.ValuesWhenEnabled {
		others = append(others, other)
	}
	sort.Strings(others)
	for _, other := range others {
		if enabled[other] {
			out = values.Merge(out, expandStrings(a.ValuesWhenEnabled[other], expand).(map[string]any))
		}
	}
	for _, fact := range slices.Sorted(maps.Keys(a.ValuesIf)) {
		if facts[fact] == "true" {
			out = values.Merge(out, expandStrings(a.ValuesIf[fact], expand).(map[string]any))
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
	sort.Strings(missing)
	if len(out) == 0 {
		return nil, slices.Compact(missing), nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	return &apiextensionsv1.JSON{Raw: raw}, slices.Compact(missing), nil
}

// factRef is a fact named in a value: only the braced form, so that a
// literal "$" in a configuration text stays as it is.
var factRef = regexp.MustCompile(`\$\{([A-Za-z][A-Za-z0-9]*)\}`)

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
