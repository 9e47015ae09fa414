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
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
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

{{- define "hivekeeper.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
What the controller may do in a namespace it watches: granted cluster-wide
by a ClusterRole when watchNamespaces is empty, else by a Role in each
watched namespace. Least privilege; each rule says why it exists.
*/}}
{{- define "hivekeeper.workloadRules" -}}
# The ToolHive custom resources: watched, and patched (finalizers,
# annotations) with an optimistic lock; never updated whole.
- apiGroups: ["toolhive.stacklok.dev"]
  resources: ["mcpservers", "mcpoidcconfigs", "mcpremoteproxies", "virtualmcpservers", "mcpgroups"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["toolhive.stacklok.dev"]
  resources: ["mcpservers/status", "mcpoidcconfigs/status", "mcpremoteproxies/status", "virtualmcpservers/status", "mcpgroups/status"]
  verbs: ["patch", "update"]
# Setting blockOwnerDeletion on a child's ownerReference needs update on the
# owner's finalizers (OwnerReferencesPermissionEnforcement).
- apiGroups: ["toolhive.stacklok.dev"]
  resources: ["mcpservers/finalizers", "mcpoidcconfigs/finalizers", "mcpremoteproxies/finalizers", "virtualmcpservers/finalizers", "mcpgroups/finalizers"]
  verbs: ["update"]
# Children: RunConfig and vMCP ConfigMaps, runner/vMCP ServiceAccounts, the
# runner RBAC, proxy Deployments and Services. Services are also deleted
# when the runner created them (finalizer cleanup) and the runner Role grants
# full CRUD on them, which the controller must hold itself to grant it.
- apiGroups: [""]
  resources: ["configmaps", "serviceaccounts", "services"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Granted to the proxy runner (RBAC escalation prevention: a Role can only
# grant what its creator holds); the controller itself deletes the
# runner-created StatefulSet on finalizer cleanup.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Immediate restarts delete the proxy pods; get/list/watch are also granted
# to the proxy runner.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "delete", "deletecollection"]
# Granted to the proxy runner only.
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["pods/attach"]
  verbs: ["get", "create"]
# Granted read-only to the MCPRemoteProxy runner (<name>-remote-proxy-runner).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
# Events on the custom resources.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
