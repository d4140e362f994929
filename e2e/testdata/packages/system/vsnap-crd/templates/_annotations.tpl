{{/* snapshot.storage.k8s.io is a protected *.k8s.io group: the apiserver
rejects a CRD in it that carries no API approval annotation. */}}
{{- define "vsnap-crd.annotations" -}}
api-approved.kubernetes.io: "https://github.com/kubernetes-csi/external-snapshotter/pull/814"
{{- end -}}
