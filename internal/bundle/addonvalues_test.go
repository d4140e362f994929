package bundle

import (
	"encoding/json"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestMainValues(t *testing.T) {
	js := func(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
	agent := &Addon{Name: "agent", Values: map[string]any{
		"url":    "http://vminsert.${monitoringNamespace}.svc.${platformClusterDomain}:8480",
		"labels": map[string]any{"cluster": "${clusterName}"},
		"list":   []any{"$literal", "${clusterName}-x"},
		"off":    nil,
	}, ValuesWhenEnabled: map[string]map[string]any{"hami": {"devicePlugin": map[string]any{"enabled": false}}}}
	crds := &Addon{Name: "crds", ValuesOf: "manager"}
	manager := &Addon{Name: "manager", ValuesIf: map[string]map[string]any{"gatewayAPI": {"config": map[string]any{"enableGatewayAPI": true}}}}
	facts := Facts{"monitoringNamespace": "tenant-root", "platformClusterDomain": "cozy.local", "clusterName": "kubernetes-foo"}
	tests := []struct {
		name        string
		addon       *Addon
		facts       Facts
		enabled     map[string]bool
		choices     map[string]Choice
		want        string // JSON, "" for nil
		wantMissing []string
	}{
		{name: "facts expanded, only the braced form", addon: agent, facts: facts,
			want: `{"labels":{"cluster":"kubernetes-foo"},"list":["$literal","kubernetes-foo-x"],"off":null,"url":"http://vminsert.tenant-root.svc.cozy.local:8480"}`},
		{name: "values while another addon is on", addon: agent, facts: facts, enabled: map[string]bool{"hami": true},
			want: `{"devicePlugin":{"enabled":false},"labels":{"cluster":"kubernetes-foo"},"list":["$literal","kubernetes-foo-x"],"off":null,"url":"http://vminsert.tenant-root.svc.cozy.local:8480"}`},
		{name: "the TenantBundle's values last", addon: agent, facts: facts,
			choices: map[string]Choice{"agent": {Values: js(`{"url":"http://elsewhere","labels":{"team":"a"}}`)}},
			want:    `{"labels":{"cluster":"kubernetes-foo","team":"a"},"list":["$literal","kubernetes-foo-x"],"off":null,"url":"http://elsewhere"}`},
		{name: "a missing fact is reported", addon: agent, facts: Facts{"platformClusterDomain": "cozy.local"},
			want:        `{"labels":{"cluster":""},"list":["$literal","-x"],"off":null,"url":"http://vminsert..svc.cozy.local:8480"}`,
			wantMissing: []string{"clusterName", "monitoringNamespace"}},
		{name: "another addon's values, then its own", addon: crds,
			choices: map[string]Choice{"manager": {Values: js(`{"a":1,"b":1}`)}, "crds": {Values: js(`{"b":2}`)}},
			want:    `{"a":1,"b":2}`},
		{name: "nothing to set", addon: crds},
		{name: "values while a boolean fact is true", addon: manager, facts: Facts{"gatewayAPI": true},
			want: `{"config":{"enableGatewayAPI":true}}`},
		{name: "not while it is false", addon: manager, facts: Facts{"gatewayAPI": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, missing, err := tt.addon.MainValues(tt.facts, tt.enabled, tt.choices)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(missing, tt.wantMissing) {
				t.Fatalf("missing = %v, want %v", missing, tt.wantMissing)
			}
			if tt.want == "" {
				if got != nil {
					t.Fatalf("values = %s, want none", got.Raw)
				}
				return
			}
			var g, w any
			if err := json.Unmarshal(got.Raw, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("values = %s, want %s", got.Raw, tt.want)
			}
		})
	}
	if _, _, err := agent.MainValues(facts, nil, map[string]Choice{"agent": {Values: js(`[1]`)}}); err == nil {
		t.Fatal("values that are not an object must be an error")
	}
}

func TestMissingFactsMessage(t *testing.T) {
	got := MissingFactsMessage("monitoring-agents", []string{"clusterName", "monitoringNamespace"})
	want := "addon monitoring-agents needs spec.platform.clusterName, spec.platform.monitoringNamespace, which the management side seeds"
	if got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
