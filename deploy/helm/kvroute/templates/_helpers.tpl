{{/* The chart's name, truncated to a DNS label. */}}
{{- define "kvroute.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: release-chart unless the release name already contains the chart name. */}}
{{- define "kvroute.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kvroute.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kvroute.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "kvroute.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kvroute.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kvroute.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kvroute.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The namespace discovery watches. */}}
{{- define "kvroute.discoveryNamespace" -}}
{{- default .Release.Namespace .Values.discovery.kubernetes.namespace }}
{{- end }}

{{/* The router's YAML configuration (docs/configuration.md): chart settings, then router.config. */}}
{{- define "kvroute.config" -}}
{{- $admin := dict "port" (ternary (int .Values.admin.port) -1 .Values.admin.enabled) "bind" (ternary "0.0.0.0" "127.0.0.1" (ne .Values.admin.tokenSecret.name "")) }}
{{- $base := dict "bind" "0.0.0.0" "port" (int .Values.service.port) "backends" .Values.backends "policy" (dict "name" .Values.router.policy) "admin" $admin "timeouts" (dict "drain" (printf "%ds" (int .Values.router.drainSeconds)) ) }}
{{- if .Values.discovery.kubernetes.enabled }}
{{- $_ := set $base "discovery" (dict "kubernetes" (dict "namespace" (include "kvroute.discoveryNamespace" .) "labelSelector" .Values.discovery.kubernetes.labelSelector "port" (toString .Values.discovery.kubernetes.port))) }}
{{- end }}
{{- toYaml (mustMergeOverwrite $base .Values.router.config) }}
{{- end }}
