{{/*
Names and labels shared by every template.

Object names: `<fullname>-controller`, `<fullname>-proxy`, `<fullname>-discovery`,
`<fullname>-ingress`. With the usual release name `coxswain` the full name is `coxswain`, which
gives the names the controller assumes by default (`coxswain-proxy`, `coxswain-discovery`).
*/}}

{{- define "coxswain.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* `<release>-<chart>`, or the release name alone when it already contains the chart name. */}}
{{- define "coxswain.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "coxswain.controller.fullname" -}}
{{- printf "%s-controller" (include "coxswain.fullname" .) }}
{{- end }}

{{- define "coxswain.proxy.fullname" -}}
{{- printf "%s-proxy" (include "coxswain.fullname" .) }}
{{- end }}

{{- define "coxswain.discovery.fullname" -}}
{{- printf "%s-discovery" (include "coxswain.fullname" .) }}
{{- end }}

{{/* host:port the proxies dial for discovery; the controller's server certificate names it. */}}
{{- define "coxswain.discovery.address" -}}
{{- printf "%s.%s.svc:%d" (include "coxswain.discovery.fullname" .) .Release.Namespace (int .Values.controller.discoveryPort) }}
{{- end }}

{{/*
The shared pool's discovery certificate Secret. Same convention as dedicated proxies
(coxswain/compile/provision.py): `<proxy ServiceAccount name>-discovery-tls`, holding tls.crt,
tls.key and ca.crt, mounted read-only at /etc/coxswain/discovery. The controller issues it.
*/}}
{{- define "coxswain.proxy.tlsSecret" -}}
{{- printf "%s-discovery-tls" (include "coxswain.proxy.fullname" .) }}
{{- end }}

{{- define "coxswain.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* Labels on every object. `managed-by: Helm` keeps them apart from the objects the
controller owns (`managed-by: coxswain`), which it may delete. */}}
{{- define "coxswain.labels" -}}
{{- $labels := dict
  "helm.sh/chart" (printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-")
  "app.kubernetes.io/name" (include "coxswain.name" .)
  "app.kubernetes.io/instance" .Release.Name
  "app.kubernetes.io/version" .Chart.AppVersion
  "app.kubernetes.io/managed-by" .Release.Service
  "app.kubernetes.io/part-of" "coxswain" }}
{{- toYaml (merge $labels (deepCopy .Values.commonLabels)) }}
{{- end }}

{{/* Pod template labels: the selector labels win over the common labels, which win over the
extra `podLabels`. Call with (dict "root" $ "selector" <selector template> "extra" <map>). */}}
{{- define "coxswain.podLabels" -}}
{{- $selector := include .selector .root | fromYaml }}
{{- $common := include "coxswain.labels" .root | fromYaml }}
{{- toYaml (merge $selector $common (deepCopy (default dict .extra))) }}
{{- end }}

{{- define "coxswain.controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "coxswain.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: controller
{{- end }}

{{/*
The shared proxy pods' selector labels. They are also the controller's
`--shared-proxy-selector`: every VIP Service the controller creates selects exactly these, so
the Deployment, the Ingress Service, the VIP Services, the HPA and the PDB all agree.
*/}}
{{- define "coxswain.proxy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "coxswain.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: shared-proxy
{{- end }}

{{/* The same labels as the controller's `--shared-proxy-selector` value: k=v, sorted, comma-joined. */}}
{{- define "coxswain.proxy.selectorFlag" -}}
{{- $labels := include "coxswain.proxy.selectorLabels" . | fromYaml }}
{{- $pairs := list }}
{{- range $key := keys $labels | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%s" $key (get $labels $key)) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/*
Pod-level security shared by every pod (restricted Pod Security Standard). Pass a dict with
`lowestPort`, the lowest port the pod listens on. Below 1024, the pod's own network namespace
treats ports from that one up as unprivileged (`net.ipv4.ip_unprivileged_port_start`, a "safe"
sysctl the restricted profile allows): Kubernetes grants no ambient capabilities, so a non-root
process never holds NET_BIND_SERVICE in its effective set, whatever the container adds.
*/}}
{{- define "coxswain.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- if lt (int .lowestPort) 1024 }}
sysctls:
  - name: net.ipv4.ip_unprivileged_port_start
    value: {{ .lowestPort | quote }}
{{- end }}
{{- end }}

{{/*
Container security: non-root, read-only root file system, no privilege escalation, every
capability dropped. Pass a dict with `lowPorts` true to add NET_BIND_SERVICE (the only
capability ever added), as coxswain/compile/podspec.py does for dedicated proxies; the pod's
sysctl above is what lets the non-root process bind such a port.
*/}}
{{- define "coxswain.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
privileged: false
capabilities:
  drop: ["ALL"]
  {{- if .lowPorts }}
  add: ["NET_BIND_SERVICE"]
  {{- end }}
{{- end }}

{{/* True when the cluster serves the Gateway API, or when the user insists. */}}
{{- define "coxswain.gatewayClass.enabled" -}}
{{- $create := .Values.gatewayAPI.gatewayClass.create }}
{{- if and .Values.gatewayAPI.enabled (or (eq (toString $create) "true") (and (eq (toString $create) "auto") (.Capabilities.APIVersions.Has "gateway.networking.k8s.io/v1/GatewayClass"))) }}true{{ end }}
{{- end }}
