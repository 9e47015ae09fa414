{{/* Chart name, overridable. */}}
{{- define "hivekeeper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Prefix of every object name: <release>-<chart>, or the release name alone
when it already contains the chart name.
*/}}
{{- define "hivekeeper.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "hivekeeper.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hivekeeper.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of the pods; also the Deployment's and Service's selector. */}}
{{- define "hivekeeper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hivekeeper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{/* Labels of every object. */}}
{{- define "hivekeeper.labels" -}}
helm.sh/chart: {{ include "hivekeeper.chart" . }}
{{ include "hivekeeper.selectorLabels" . }}
app.kubernetes.io/version: {{ include "hivekeeper.version" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hivekeeper
{{- end }}

{{- define "hivekeeper.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hivekeeper.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The Secret with the metrics serving certificate (tls.crt, tls.key) and the
CA that verifies it (ca.crt): the user's, cert-manager's, or, with the
ServiceMonitor on, the chart's own. Empty: each pod makes a self-signed one.
*/}}
{{- define "hivekeeper.metricsCertSecret" -}}
{{- if .Values.metrics.certSecret }}
{{- .Values.metrics.certSecret }}
{{- else if or .Values.metrics.certManager.enabled .Values.serviceMonitor.enabled }}
{{- include "hivekeeper.fullname" . }}-metrics-tls
{{- end }}
{{- end }}

{{/* The metrics Service's name; Prometheus Operator makes it the job label. */}}
{{- define "hivekeeper.metricsService" -}}
{{- include "hivekeeper.fullname" . }}-metrics
{{- end }}

{{/*
The controller's version: the image's tag, which defaults to the chart's
appVersion. `kubectl hivekeeper version` reads it from the Deployment's
app.kubernetes.io/version label when the image is pinned by digest alone.
*/}}
{{- define "hivekeeper.version" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "hivekeeper.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "hivekeeper.version" .) }}
{{- end }}
{{- end }}

{{/*
The ClusterRoles bound to the proxy runners' and the registry APIs'
ServiceAccounts (runner-rbac.yaml). The controller may bind them and
nothing else.
*/}}
{{- define "hivekeeper.proxyRunnerClusterRole" -}}
{{ include "hivekeeper.fullname" . }}-proxy-runner
{{- end }}

{{- define "hivekeeper.stdioProxyRunnerClusterRole" -}}
{{ include "hivekeeper.fullname" . }}-stdio-proxy-runner
{{- end }}

{{- define "hivekeeper.remoteProxyRunnerClusterRole" -}}
{{ include "hivekeeper.fullname" . }}-remote-proxy-runner
{{- end }}

{{- define "hivekeeper.registryAPIClusterRole" -}}
{{ include "hivekeeper.fullname" . }}-registry-api
{{- end }}

{{- define "hivekeeper.vmcpDiscoveredClusterRole" -}}
{{ include "hivekeeper.fullname" . }}-vmcp-discovered
{{- end }}

{{- define "hivekeeper.vmcpInlineClusterRole" -}}
{{ include "hivekeeper.fullname" . }}-vmcp-inline
{{- end }}

{{/*
What the controller may do in a namespace it watches: granted cluster-wide
by a ClusterRole when watchNamespaces is empty, else by a Role in each
watched namespace. Least privilege; each rule says why it exists. pkg/rbac
declares the same rules and a test compares them.
*/}}
{{- define "hivekeeper.workloadRules" -}}
# The ToolHive custom resources: watched, and patched (finalizers,
# annotations) with an optimistic lock; never updated whole.
- apiGroups: ["toolhive.stacklok.dev"]
  resources: ["mcpservers", "mcpoidcconfigs", "mcpremoteproxies", "virtualmcpservers", "mcpgroups", "mcptoolconfigs", "mcpauthzconfigs", "mcpexternalauthconfigs", "mcptelemetryconfigs", "mcpwebhookconfigs", "mcpserverentries", "virtualmcpcompositetooldefinitions", "embeddingservers", "mcpregistries"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["toolhive.stacklok.dev"]
  resources: ["mcpservers/status", "mcpoidcconfigs/status", "mcpremoteproxies/status", "virtualmcpservers/status", "mcpgroups/status", "mcptoolconfigs/status", "mcpauthzconfigs/status", "mcpexternalauthconfigs/status", "mcptelemetryconfigs/status", "mcpwebhookconfigs/status", "mcpserverentries/status", "virtualmcpcompositetooldefinitions/status", "embeddingservers/status", "mcpregistries/status"]
  verbs: ["patch"]
# Setting blockOwnerDeletion on a child's ownerReference needs update on the
# owner's finalizers (OwnerReferencesPermissionEnforcement).
- apiGroups: ["toolhive.stacklok.dev"]
  resources: ["mcpservers/finalizers", "mcpoidcconfigs/finalizers", "mcpremoteproxies/finalizers", "virtualmcpservers/finalizers", "mcpgroups/finalizers", "mcptoolconfigs/finalizers", "mcpauthzconfigs/finalizers", "mcpexternalauthconfigs/finalizers", "mcptelemetryconfigs/finalizers", "mcpwebhookconfigs/finalizers", "mcpserverentries/finalizers", "virtualmcpcompositetooldefinitions/finalizers", "embeddingservers/finalizers", "mcpregistries/finalizers"]
  verbs: ["update"]
# Children: RunConfig, vMCP and registry ConfigMaps, runner/vMCP/registry
# API ServiceAccounts, proxy, vMCP and registry API Deployments and
# Services, the EmbeddingServers' Services, the runners' and registry APIs'
# RoleBindings. Created,
# patched and deleted, never updated whole. Services are also deleted when
# the proxy runner created them (finalizer cleanup).
- apiGroups: [""]
  resources: ["configmaps", "serviceaccounts", "services"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["rolebindings"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# The RoleBindings of the runners, the vMCPs and the registry APIs
# reference these ClusterRoles and only these: bind lets a binding grant a
# role its creator does not hold itself, so the controller holds none of
# their permissions.
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["clusterroles"]
  resourceNames: [{{ include "hivekeeper.proxyRunnerClusterRole" . | quote }}, {{ include "hivekeeper.stdioProxyRunnerClusterRole" . | quote }}, {{ include "hivekeeper.remoteProxyRunnerClusterRole" . | quote }}, {{ include "hivekeeper.registryAPIClusterRole" . | quote }}, {{ include "hivekeeper.vmcpDiscoveredClusterRole" . | quote }}, {{ include "hivekeeper.vmcpInlineClusterRole" . | quote }}]
  verbs: ["bind"]
# A vMCP's session HMAC key Secret is created once, where it is missing;
# create writes a Secret, it never reads one.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create"]
# An EmbeddingServer's StatefulSet; the MCPServer finalizer also reads,
# then deletes, the StatefulSet the proxy runner created.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# An immediate restart deletes the proxy pods in one request; the proxy
# pods and the vMCPs' pods are watched for the states their status reports.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch", "deletecollection"]
# Events on the custom resources.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
