{{/* Labels of every object of the release. */}}
{{- define "tideway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The functions to run: each enabled function of generated/functions.yaml, once per served
namespace (once in all if watchNamespaces is empty), as a JSON list of
  name       the function
  namespace  the namespace it serves ("": all)
  fullName   its Deployment, ServiceAccount, PDB, Service and ScaledObject
  consumer   its durable consumer ("" for a service)
  scaled     KEDA scales it
  fn         what serverless.yml says (generated/functions.yaml)
  o          values functions.<name>
*/}}
{{- define "tideway.instances" -}}
{{- $gen := .Files.Get "generated/functions.yaml" | fromYaml -}}
{{- $namespaces := .Values.watchNamespaces | default (list "") -}}
{{- $items := list -}}
{{- range $name, $fn := $gen.functions -}}
{{- $o := get $.Values.functions $name | default dict -}}
{{- if or (not (hasKey $o "enabled")) $o.enabled -}}
{{- range $ns := $namespaces -}}
{{- $fullName := $fn.serviceAccount.cluster -}}
{{- $consumer := "" -}}
{{- if $fn.consumer -}}{{- $consumer = $fn.consumer.cluster -}}{{- end -}}
{{- if $ns -}}
{{- $fullName = $fn.serviceAccount.namespaced | replace "__WATCH_NAMESPACE__" $ns -}}
{{- if $fn.consumer -}}{{- $consumer = $fn.consumer.namespaced | replace "__WATCH_NAMESPACE__" $ns -}}{{- end -}}
{{- end -}}
{{- $scaled := and $.Values.keda.enabled (not $fn.service) -}}
{{- $items = append $items (dict "name" $name "namespace" $ns "fullName" $fullName "consumer" $consumer "scaled" $scaled "fn" $fn "o" $o) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $items -}}
{{- end }}

{{/* The label naming the namespace a function serves (as infra/install.ts names it). */}}
{{- define "tideway.watchNamespaceLabel" -}}
{{- (.Files.Get "generated/functions.yaml" | fromYaml).watchNamespaceLabel -}}
{{- end }}

{{/* Selector labels of one function's pods; takes (dict "ctx" $ "i" <instance>). */}}
{{- define "tideway.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .i.name }}
{{- with .i.namespace }}
{{ include "tideway.watchNamespaceLabel" $.ctx }}: {{ . }}
{{- end }}
{{- end }}

{{/* Labels of one function's objects; takes (dict "ctx" $ "i" <instance>). */}}
{{- define "tideway.functionLabels" -}}
{{ include "tideway.labels" .ctx }}
app.kubernetes.io/component: {{ .i.name }}
{{- with .i.namespace }}
{{ include "tideway.watchNamespaceLabel" $.ctx }}: {{ . }}
{{- end }}
{{- end }}

{{/* An override of values functions.<name> if set (false and 0 count), else the default. */}}
{{- define "tideway.pick" -}}
{{- if hasKey .o .key -}}{{- get .o .key -}}{{- else -}}{{- .default -}}{{- end -}}
{{- end }}
