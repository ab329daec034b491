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

{{/* The Secret holding the secure port's certificate: the user's
certSecret, else the one the chart generates, else none (self-signed per
pod). */}}
{{- define "hangwatch.servingSecret" -}}
{{- if .Values.secureServing.certSecret -}}
{{ .Values.secureServing.certSecret }}
{{- else if .Values.secureServing.generateCert -}}
{{ include "hangwatch.fullname" . }}-serving-cert
{{- end -}}
{{- end -}}

{{/* The name the PodMonitor verifies the certificate against. */}}
{{- define "hangwatch.serverName" -}}
{{- if .Values.secureServing.certSecret -}}
{{ required "secureServing.serverName: a name secureServing.certSecret's certificate holds" .Values.secureServing.serverName }}
{{- else -}}
{{ .Values.secureServing.serverName | default (printf "%s.%s.svc" (include "hangwatch.fullname" .) .Release.Namespace) }}
{{- end -}}
{{- end -}}
