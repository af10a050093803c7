{{- define "pykai.labels" -}}
app.kubernetes.io/name: pykai
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "pykai.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The components run by `pykai run --components`: name -> (values key, components). */}}
{{- define "pykai.components" -}}
scheduler: {values: scheduler, components: scheduler, leaderElect: true}
binder: {values: binder, components: binder, leaderElect: true}
podgrouper: {values: podGrouper, components: podgrouper, leaderElect: true}
controllers: {values: controllers, components: "queuecontroller,podgroupcontroller", leaderElect: true}
{{- end -}}
