{{/* vim: set filetype=mustache: */}}

{{- define "kho.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kho.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kho.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kho.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kho.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kho.labels" -}}
helm.sh/chart: {{ include "kho.chart" . }}
{{ include "kho.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kafka-health-operator
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "kho.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kho.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kho.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
The namespaces whose KafkaHealthPolicies the operator serves, as a JSON list; [] means all
namespaces (watch.allNamespaces). Default: the release namespace only.
*/}}
{{- define "kho.watchNamespaces" -}}
{{- if .Values.watch.allNamespaces -}}
{{- if .Values.watch.namespaces -}}
{{- fail "set either watch.allNamespaces=true or watch.namespaces, not both" -}}
{{- end -}}
[]
{{- else if .Values.watch.namespaces -}}
{{- .Values.watch.namespaces | uniq | toJson -}}
{{- else -}}
{{- list .Release.Namespace | toJson -}}
{{- end -}}
{{- end -}}

{{/* Peering: the name Kopf uses, or "" in standalone mode. */}}
{{- define "kho.peeringName" -}}
{{- if .Values.peering.enabled -}}
{{- .Values.peering.name -}}
{{- end -}}
{{- end -}}

{{/*
RBAC. The operator's Kubernetes API use, exactly (docs/install.md, "Permissions"):
  - rules.policies: what it does in every namespace it serves;
  - rules.brokers: broker pods living in a namespace it does not serve (rbac.extraNamespaces);
  - rules.cluster: cluster-scoped reads Kopf needs in every mode (CRD discovery);
  - rules.clusterwide: what only an --all-namespaces operator needs.
Kopf's peerings are kopf.dev/v1 (crds/kopf-peering.yaml). A cluster may also have the legacy
zalando.org/v1 peering CRDs of an older Kopf-based operator; Kopf then serves both groups, so
both are listed for the peering resources (same verbs; without it Kopf fails with 403 there).
*/}}
{{/* The namespace of the per-Kafka-cluster action Leases. */}}
{{- define "kho.lockNamespace" -}}
{{- .Values.lockNamespace | default .Release.Namespace -}}
{{- end }}

{{/* The per-Kafka-cluster action lock (Leases in the lock namespace; compare-and-swap writes). */}}
{{- define "kho.rules.lock" -}}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
{{- end }}

{{- define "kho.rules.policies" -}}
- apiGroups: ["kafkahealth.io"]
  resources: ["kafkahealthpolicies"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["kafkahealth.io"]
  resources: ["kafkahealthpolicies/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{ include "kho.rules.brokers" . }}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "create", "update", "patch", "delete"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- if and .Values.peering.enabled (not .Values.watch.allNamespaces) }}
- apiGroups: ["kopf.dev", "zalando.org"]
  resources: ["kopfpeerings"]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- end -}}

{{- define "kho.rules.brokers" -}}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "delete"]
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list"]
{{- end -}}

{{- define "kho.rules.cluster" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["get", "list", "watch"]
{{- end -}}

{{- define "kho.rules.clusterwide" -}}
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["list", "watch"]
{{- if .Values.peering.enabled }}
- apiGroups: ["kopf.dev", "zalando.org"]
  resources: ["clusterkopfpeerings"]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- end -}}
