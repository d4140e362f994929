{{- /*
How apps/kubernetes' addons map onto the tenant bundle (see README.md).
Each entry: the addons this key switches (enabled follows
addons.<key>.enabled), the addon its valuesOverride tunes, or the
bootstrap component it overrides, or the spec.cluster switch it sets;
"gatedBy" names another key whose
enabled switches it; "skip" says why a key is not seeded.
*/ -}}
{{- define "tenant-operator.addonMap" -}}
certManager: {addons: [cert-manager], values: cert-manager}
cilium: {component: cilium}
coredns: {component: coredns}
gatewayAPI: {cluster: gatewayAPI}
gpuOperator: {addons: [gpu-operator], values: gpu-operator}
hami: {addons: [hami], values: hami}
monitoringAgents: {addons: [monitoring-agents, vertical-pod-autoscaler], values: monitoring-agents}
verticalPodAutoscaler: {values: vertical-pod-autoscaler, gatedBy: monitoringAgents}
velero: {addons: [velero], values: velero}
ingressNginx: {skip: "ingress is a catalog app in the tenant, not a cluster addon"}
fluxcd: {skip: "the tenant operator runs the tenant's Flux itself"}
ouroboros: {skip: "not an addon of the tenant bundle yet"}
{{- end -}}

{{- /* The spec.addons and spec.components of the TenantBundle, as YAML. */ -}}
{{- define "tenant-operator.choices" -}}
{{- $map := fromYaml (include "tenant-operator.addonMap" .) -}}
{{- $addons := dict -}}
{{- $components := dict -}}
{{- range $key, $v := .Values.addons -}}
{{- $m := index $map $key -}}
{{- if not $m -}}
{{- fail (printf "addons.%s has no mapping to the tenant operator's bundle (manifests/cozystack/templates/_tenant-operator.tpl)" $key) -}}
{{- end -}}
{{- if not $m.skip -}}
{{- $on := $v.enabled -}}
{{- if $m.gatedBy -}}{{- $on = (index $.Values.addons $m.gatedBy).enabled -}}{{- end -}}
{{- range $m.addons -}}
{{- $_ := set $addons . (dict "enabled" (ternary true false (eq (toString $on) "true"))) -}}
{{- end -}}
{{- with $v.valuesOverride -}}
{{- if $m.component -}}
{{- $_ := set $components $m.component (dict "values" .) -}}
{{- else if $m.values -}}
{{- $a := index $addons $m.values | default (dict "enabled" (ternary true false (eq (toString $on) "true"))) -}}
{{- $_ := set $a "values" . -}}
{{- $_ := set $addons $m.values $a -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
addons: {{ toJson $addons }}
components: {{ toJson $components }}
{{- end -}}

{{- /* The packages artifact: given, or the platform's own OCIRepository. */ -}}
{{- define "tenant-operator.packages" -}}
{{- $p := (.Values.tenantOperator | default dict).packages | default dict -}}
{{- $url := $p.url | default "" -}}
{{- $tag := $p.tag | default "" -}}
{{- $digest := $p.digest | default "" -}}
{{- if not $url -}}
{{- $repo := lookup "source.toolkit.fluxcd.io/v1" "OCIRepository" "cozy-system" "cozystack-packages" -}}
{{- if $repo -}}
{{- $url = $repo.spec.url -}}
{{- $ref := $repo.spec.ref | default dict -}}
{{- $tag = $ref.tag | default "" -}}
{{- $rev := (($repo.status | default dict).artifact | default dict).revision | default "" -}}
{{- if contains "@" $rev -}}{{- $digest = last (splitList "@" $rev) -}}{{- end -}}
{{- end -}}
{{- end -}}
url: {{ $url | quote }}
{{- with $tag }}
tag: {{ . | quote }}
{{- end }}
{{- with $digest }}
digest: {{ . | quote }}
{{- end }}
{{- end -}}
