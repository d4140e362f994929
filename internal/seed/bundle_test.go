package seed

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

func TestPrecedence(t *testing.T) {
	on, off := ptr.To(true), ptr.To(false)
	enabledBy := func(manager, addon string) metav1.ManagedFieldsEntry {
		raw := `{"f:spec":{"f:addons":{"f:` + addon + `":{"f:enabled":{}}}}}`
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
	}
	live := func(last map[string]tenantv1.AddonSpec, owners ...metav1.ManagedFieldsEntry) *tenantv1.TenantBundle {
		raw, _ := json.Marshal(last)
		b := &tenantv1.TenantBundle{}
		b.Annotations = map[string]string{SeededAddonsAnnotation: string(raw)}
		b.ManagedFields = owners
		return b
	}
	tests := []struct {
		name    string
		desired map[string]tenantv1.AddonSpec
		current *tenantv1.TenantBundle
		applied *bool // what the seed applies for addon "x"; nil: yields
	}{
		{name: "first seed", desired: map[string]tenantv1.AddonSpec{"x": {Enabled: off}}, applied: off},
		{name: "seed still owns the field",
			desired: map[string]tenantv1.AddonSpec{"x": {Enabled: off}},
			current: live(map[string]tenantv1.AddonSpec{"x": {Enabled: off}}, enabledBy(SeedManager, "x")), applied: off},
		{name: "tenant toggled, management unchanged: the toggle stays",
			desired: map[string]tenantv1.AddonSpec{"x": {Enabled: off}},
			current: live(map[string]tenantv1.AddonSpec{"x": {Enabled: off}}, enabledBy(CLIManager, "x"))},
		{name: "tenant toggled with kubectl edit: the toggle stays",
			desired: map[string]tenantv1.AddonSpec{"x": {Enabled: off}},
			current: live(map[string]tenantv1.AddonSpec{"x": {Enabled: off}}, enabledBy("kubectl-edit", "x"))},
		{name: "tenant toggled, management changed its value: management wins",
			desired: map[string]tenantv1.AddonSpec{"x": {Enabled: on}},
			current: live(map[string]tenantv1.AddonSpec{"x": {Enabled: off}}, enabledBy(CLIManager, "x")), applied: on},
		{name: "tenant set it before management ever did: management's first word wins",
			desired: map[string]tenantv1.AddonSpec{"x": {Enabled: off}},
			current: live(nil, enabledBy(CLIManager, "x")), applied: off},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, record, err := Precedence(tt.desired, tt.current)
			if err != nil {
				t.Fatal(err)
			}
			x, ok := got["x"]
			switch {
			case tt.applied == nil && ok:
				t.Errorf("applied %v, want the field left to the tenant", *x.Enabled)
			case tt.applied != nil && (!ok || x.Enabled == nil || *x.Enabled != *tt.applied):
				t.Errorf("applied %v, want %v", got, *tt.applied)
			}
			var rec map[string]tenantv1.AddonSpec
			if err := json.Unmarshal([]byte(record), &rec); err != nil || *rec["x"].Enabled != *tt.desired["x"].Enabled {
				t.Errorf("record %s does not hold the management side's own choice", record)
			}
		})
	}
}
