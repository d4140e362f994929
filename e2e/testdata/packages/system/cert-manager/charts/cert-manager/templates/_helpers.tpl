{{- define "cert-manager.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cert-manager.webhook.fullname" -}}
{{- printf "%s-webhook" (include "cert-manager.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
