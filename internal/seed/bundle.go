package seed

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

// Field managers of the TenantBundle. The management side (the seeder and
// `kubectl tenant seed`) applies as SeedManager; tenant admins change
// addons as CLIManager (or any other manager, e.g. kubectl edit).
const (
	SeedManager = "tenant-seeder"
	CLIManager  = "kubectl-tenant"
)

// SeededAddonsAnnotation records the addon choices the management side
// applied last, so that a re-seed can tell "the management side changed
// its mind" from "the tenant admin changed it since".
const SeededAddonsAnnotation = "tenant.cozystack.io/seeded-addons"

// Precedence decides which addon fields a re-seed applies. For each addon
// field (enabled, values) the management side wants:
//   - if nobody else owns the field, it is applied (and owned by the seed);
//   - if a tenant admin owns it (took it over with a forced apply), it is
//     applied only when the management side's value differs from the one
//     it applied last: an unchanged management value never undoes a
//     tenant's toggle, a changed one wins.
//
// A field the management side stops setting is released (server-side
// apply removes it if the seed still owned it; a tenant's stays).
//
// desired is what the management side wants now; current is the live
// TenantBundle (nil on first seed). The result is desired with the
// yielded fields removed, and the annotation to record.
func Precedence(desired map[string]tenantv1.AddonSpec, current *tenantv1.TenantBundle) (map[string]tenantv1.AddonSpec, string, error) {
	record, err := json.Marshal(desired)
	if err != nil {
		return nil, "", err
	}
	if current == nil {
		return desired, string(record), nil
	}
	last := map[string]tenantv1.AddonSpec{}
	if raw := current.Annotations[SeededAddonsAnnotation]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &last); err != nil {
			return nil, "", fmt.Errorf("annotation %s: %w", SeededAddonsAnnotation, err)
		}
	}
	owners := AddonFieldOwners(current.ManagedFields)
	out := map[string]tenantv1.AddonSpec{}
	for name, want := range desired {
		prev := last[name]
		got := tenantv1.AddonSpec{}
		if want.Enabled != nil {
			tenant := tenantOwned(owners[name+"/enabled"])
			changed := prev.Enabled == nil || *prev.Enabled != *want.Enabled
			if !tenant || changed {
				got.Enabled = want.Enabled
			}
		}
		if want.Values != nil {
			tenant := tenantOwned(owners[name+"/values"])
			changed := prev.Values == nil || !equality.Semantic.DeepEqual(prev.Values.Raw, want.Values.Raw)
			if !tenant || changed {
				got.Values = want.Values
			}
		}
		if got.Enabled != nil || got.Values != nil {
			out[name] = got
		}
	}
	return out, string(record), nil
}

// tenantOwned says whether a field has an owner other than the seed.
func tenantOwned(managers []string) bool {
	for _, m := range managers {
		if m != SeedManager {
			return true
		}
	}
	return false
}

// AddonFieldOwners maps "<addon>/enabled" and "<addon>/values" to the
// managers that own them (apply or update).
func AddonFieldOwners(entries []metav1.ManagedFieldsEntry) map[string][]string {
	out := map[string][]string{}
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var tree struct {
			Spec struct {
				Addons map[string]map[string]any `json:"f:addons"`
			} `json:"f:spec"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &tree); err != nil {
			continue
		}
		for key, sub := range tree.Spec.Addons {
			name, ok := strings.CutPrefix(key, "f:")
			if !ok {
				continue
			}
			for _, f := range []string{"enabled", "values"} {
				if _, ok := sub["f:"+f]; ok {
					out[name+"/"+f] = append(out[name+"/"+f], e.Manager)
				}
			}
		}
	}
	return out
}
