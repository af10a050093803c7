{{/* The chart's name (nameOverride replaces it). */}}
{{- define "pykai.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The prefix of every object's name: fullnameOverride, else the release's name when it
contains the chart's name (a release named `pykai` makes `pykai-scheduler`, ...), else
RELEASE-CHART; at most 63 characters. */}}
{{- define "pykai.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "pykai.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end -}}

{{/* FULLNAME-SUFFIX, the prefix cut so that the whole stays within 63 characters (a Service
name, a label value). Called with (list $ "SUFFIX"). */}}
{{- define "pykai.named" -}}
{{- $suffix := index . 1 }}
{{- $prefix := include "pykai.fullname" (index . 0) | trunc (int (sub 62 (len $suffix))) | trimSuffix "-" }}
{{- printf "%s-%s" $prefix $suffix }}
{{- end -}}

{{- define "pykai.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The labels of every object (and pod) the chart makes. */}}
{{- define "pykai.labels" -}}
helm.sh/chart: {{ include "pykai.chart" . }}
{{ include "pykai.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* What selects this release's pods (with app.kubernetes.io/component for one Deployment's). */}}
{{- define "pykai.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pykai.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The Deployments of `pykai run`: name -> its values key and its parts (the components it
runs, each also the key of KAI's values for it: KAI runs the queue and PodGroup controllers
apart, pykai in one Deployment). */}}
{{- define "pykai.components" -}}
scheduler: {values: scheduler, parts: [scheduler]}
binder: {values: binder, parts: [binder]}
podgrouper: {values: podGrouper, parts: [podgrouper]}
controllers: {values: controllers, parts: [queuecontroller, podgroupcontroller]}
{{- end -}}

{{/* The settings the templates use, with KAI's value names (see README.md, "KAI's values")
applied over pykai's: each KAI value that is given wins. */}}
{{- define "pykai.settings" -}}
{{- $v := .Values }}
{{- $g := $v.global | default dict }}
{{- $image := deepCopy $v.image }}
{{- if $g.registry }}{{ $_ := set $image "repository" (printf "%s/pykai" (trimSuffix "/" $g.registry)) }}{{ end }}
{{- if $g.tag }}{{ $_ := set $image "tag" $g.tag }}{{ end }}
{{- if $g.imagePullPolicy }}{{ $_ := set $image "pullPolicy" $g.imagePullPolicy }}{{ end }}
{{- $_ := set $image "tag" ($image.tag | default .Chart.AppVersion) }}
image: {{ toYaml $image | nindent 2 }}
imagePullSecrets: {{ toYaml ($g.imagePullSecrets | default $v.imagePullSecrets) | nindent 2 }}
logFormat: {{ if hasKey $g "jsonLog" }}{{ ternary "json" "text" $g.jsonLog }}{{ else }}{{ $v.logFormat }}{{ end }}
gpuSharing: {{ hasKey $g "gpuSharing" | ternary $g.gpuSharing $v.gpuSharing.enabled }}
priorityClasses: {{ hasKey ($v.defaultPriorityClasses | default dict) "enabled" | ternary ($v.defaultPriorityClasses | default dict).enabled $v.priorityClasses.create }}
pod:
  nodeSelector: {{ toYaml ($g.nodeSelector | default $v.nodeSelector) | nindent 4 }}
  tolerations: {{ toYaml ($g.tolerations | default $v.tolerations) | nindent 4 }}
  affinity: {{ toYaml ($g.affinity | default $v.affinity) | nindent 4 }}
  priorityClassName: {{ $g.priorityClassName | default $v.priorityClassName | quote }}
  securityContext: {{ toYaml ($g.podSecurityContext | default $v.podSecurityContext) | nindent 4 }}
securityContext: {{ toYaml (mergeOverwrite (deepCopy ($v.securityContext | default dict)) ($g.securityContext | default dict)) | nindent 2 }}
{{- /* the queues KAI's chart makes: its defaultQueue.* over pykai's defaultQueues.* */}}
{{- $queues := deepCopy $v.defaultQueues }}
{{- $kaiQueues := deepCopy ($v.defaultQueue | default dict) }}
{{- if hasKey $kaiQueues "createDefaultQueue" }}{{ $_ := set $queues "create" $kaiQueues.createDefaultQueue }}{{ end }}
{{- $_ := unset $kaiQueues "createDefaultQueue" }}
defaultQueues: {{ toYaml (mergeOverwrite $queues $kaiQueues) | nindent 2 }}
{{- /* each component: pykai's section, then KAI's sections over it */}}
components:
{{- range $name, $component := include "pykai.components" . | fromYaml }}
{{- $section := deepCopy (index $v $component.values) }}
{{- $parts := list }}
{{- range $part := $component.parts }}
{{- $kai := index $v $part | default dict }}
{{- if hasKey $kai "enabled" | ternary $kai.enabled $section.enabled }}{{ $parts = append $parts $part }}{{ end }}
{{- range $key := list "resources" "affinity" }}
{{- if hasKey $kai $key }}{{ $_ := set $section $key (index $kai $key) }}{{ end }}
{{- end }}
{{- if $kai.podDisruptionBudget }}{{ $_ := set $section "podDisruptionBudget" (mergeOverwrite (deepCopy ($section.podDisruptionBudget | default dict)) $kai.podDisruptionBudget) }}{{ end }}
{{- end }}
{{- $kaiPorts := (index $v (first $component.parts) | default dict).ports | default dict }}
  {{ $name }}:
    components: {{ $parts | join "," | quote }}
    replicas: {{ $section.replicas }}
    metricsPort: {{ $kaiPorts.metricsPort | default $v.metrics.port }}
    resources: {{ toYaml $section.resources | nindent 6 }}
    affinity: {{ toYaml $section.affinity | nindent 6 }}
    podDisruptionBudget: {{ toYaml $section.podDisruptionBudget | nindent 6 }}
{{- /* one more scheduler per shard: the scheduler's settings, its own configuration */}}
{{- if eq $name "scheduler" }}
{{- range $shard, $_ := $v.shards | default dict }}
  scheduler-{{ $shard }}:
    components: {{ $parts | join "," | quote }}
    replicas: {{ $section.replicas }}
    metricsPort: {{ $kaiPorts.metricsPort | default $v.metrics.port }}
    resources: {{ toYaml $section.resources | nindent 6 }}
    affinity: {{ toYaml $section.affinity | nindent 6 }}
    podDisruptionBudget: {{ toYaml $section.podDisruptionBudget | nindent 6 }}
    account: scheduler
    shard: {{ $shard }}
{{- end }}
{{- end }}
{{- end }}
{{- $admission := $v.admission | default dict }}
{{- $webhook := deepCopy $v.webhook }}
{{- if hasKey $admission "enabled" }}{{ $_ := set $webhook "enabled" $admission.enabled }}{{ end }}
{{- if ($admission.ports | default dict).webhookPort }}{{ $_ := set $webhook "port" $admission.ports.webhookPort }}{{ end }}
{{- range $key := list "resources" "affinity" }}
{{- if hasKey $admission $key }}{{ $_ := set $webhook $key (index $admission $key) }}{{ end }}
{{- end }}
{{- if $admission.podDisruptionBudget }}{{ $_ := set $webhook "podDisruptionBudget" (mergeOverwrite (deepCopy ($webhook.podDisruptionBudget | default dict)) $admission.podDisruptionBudget) }}{{ end }}
webhook: {{ toYaml $webhook | nindent 2 }}
{{- /* KAI's scheduler.* values as a SchedulingShard spec, read after schedulerConfig */}}
{{- $shard := dict }}
{{- with $v.scheduler.placementStrategy }}{{ $_ := set $shard "placementStrategy" (dict "gpu" . "cpu" .) }}{{ end }}
{{- range $key := list "args" "actions" "plugins" }}
{{- with index $v.scheduler $key }}{{ $_ := set $shard $key . }}{{ end }}
{{- end }}
shard: {{ toYaml $shard | nindent 2 }}
{{- end -}}

{{/* The scheduler's configuration file: pykai's schedulerConfig, then (when KAI's scheduler
values are given) a SchedulingShard whose fields override it. */}}
{{- define "pykai.schedulerConfig" -}}
{{ toYaml .Values.schedulerConfig }}
{{- with (include "pykai.settings" . | fromYaml).shard }}
---
apiVersion: kai.scheduler/v1
kind: SchedulingShard
metadata:
  name: default
spec:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A shard's configuration file (called with (list $ SHARD)): the scheduler's, then the
shard's own fields as a SchedulingShard of that name, which override it. */}}
{{- define "pykai.shardConfig" -}}
{{- $root := index . 0 }}
{{- $name := index . 1 }}
{{- include "pykai.schedulerConfig" $root }}
---
apiVersion: kai.scheduler/v1
kind: SchedulingShard
metadata:
  name: {{ $name }}
spec:
  {{- toYaml (index $root.Values.shards $name) | nindent 2 }}
{{- end -}}

{{/* Pod-level fields every pykai pod shares (called with dict "settings" and "affinity": the
component's own, else the global one). */}}
{{- define "pykai.podFields" -}}
{{- $pod := .settings.pod }}
{{- $fields := dict }}
{{- with .settings.imagePullSecrets }}{{ $_ := set $fields "imagePullSecrets" . }}{{ end }}
{{- with $pod.securityContext }}{{ $_ := set $fields "securityContext" . }}{{ end }}
{{- with $pod.priorityClassName }}{{ $_ := set $fields "priorityClassName" . }}{{ end }}
{{- with $pod.nodeSelector }}{{ $_ := set $fields "nodeSelector" . }}{{ end }}
{{- with $pod.tolerations }}{{ $_ := set $fields "tolerations" . }}{{ end }}
{{- with .affinity | default $pod.affinity }}{{ $_ := set $fields "affinity" . }}{{ end }}
{{- with $fields }}{{ toYaml . }}{{ end }}
{{- end -}}

{{/* The metrics ports of the enabled components, without repeats, comma-separated (called
with the settings). */}}
{{- define "pykai.metricsPorts" -}}
{{- $ports := list }}
{{- range $component := .components }}
{{- if $component.components }}{{ $ports = append $ports (int $component.metricsPort | toString) }}{{ end }}
{{- end }}
{{- $ports | uniq | join "," }}
{{- end -}}
