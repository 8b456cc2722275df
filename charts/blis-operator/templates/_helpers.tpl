{{/* The chart name, overridable with nameOverride. */}}
{{- define "blis-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object name: the release name when it already contains the chart name
(so release "blis-operator" gives the names config/default gives), else "<release>-<chart>".
Kept to 30 characters, as suffixes such as "-controller-manager-metrics-service" follow.
*/}}
{{- define "blis-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 30 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 30 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 30 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart name and version, for the helm.sh/chart label. */}}
{{- define "blis-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of the manager's pods, also its Deployment's and Service's selector. */}}
{{- define "blis-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "blis-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end }}

{{/* Labels of every object. */}}
{{- define "blis-operator.labels" -}}
{{ include "blis-operator.selectorLabels" . }}
helm.sh/chart: {{ include "blis-operator.chart" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: blis-operator
{{- end }}

{{/* The manager image reference. */}}
{{- define "blis-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
