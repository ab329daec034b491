{{/* The name every object of the release carries. */}}
{{- define "hangwatch.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hangwatch.selectorLabels" -}}
app.kubernetes.io/name: hangwatch
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hangwatch.labels" -}}
{{ include "hangwatch.selectorLabels" . }}
app.kubernetes.io/component: node-agent
app.kubernetes.io/part-of: hangwatch
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The ServiceAccount's username, as the API server authenticates it. */}}
{{- define "hangwatch.username" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "hangwatch.fullname" . }}
{{- end -}}
