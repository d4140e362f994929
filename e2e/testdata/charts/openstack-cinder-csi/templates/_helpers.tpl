{{- define "cinder.image" -}}
{{ .image.repository }}:{{ .image.tag }}
{{- end }}

{{- define "cinder.pluginImage" -}}
{{ .Values.csi.plugin.image.repository }}:{{ .Values.csi.plugin.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- /* Both workloads read cloud.conf the same way; with neither a Secret nor
the host mount they get no config at all, which is the user's choice. */}}
{{- define "cinder.hasCloudConfig" -}}
{{- if or .Values.secret.enabled .Values.secret.hostMount }}true{{ end }}
{{- end }}

{{- define "cinder.cloudConfigVolume" -}}
{{- if .Values.secret.enabled -}}
- name: cloud-config
  secret:
    secretName: {{ .Values.secret.name }}
{{- else if .Values.secret.hostMount -}}
- name: cloud-config
  hostPath:
    path: /etc/kubernetes
    type: Directory
{{- end }}
{{- end }}

{{- define "cinder.cloudConfigMount" -}}
{{- if include "cinder.hasCloudConfig" . -}}
- name: cloud-config
  mountPath: /etc/kubernetes
  readOnly: true
{{- end }}
{{- end }}

{{- define "cinder.pluginEnv" -}}
- name: CLOUD_CONFIG
  value: /etc/kubernetes/{{ .Values.secret.filename }}
- name: CLUSTER_NAME
  value: {{ .Values.clusterID | quote }}
{{- end }}
