{{/*
The API endpoint both the agent and the operator must use before the CNI is
up: the kubelet-injected ClusterIP is unreachable until Cilium itself serves it.
*/}}
{{- define "cilium.apiEndpointEnv" -}}
{{- if .Values.k8sServiceHost -}}
- name: KUBERNETES_SERVICE_HOST
  value: {{ .Values.k8sServiceHost | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ .Values.k8sServicePort | quote }}
{{- end -}}
{{- end }}

{{- define "cilium.image" -}}
{{ .repository }}:{{ .tag }}
{{- end }}
