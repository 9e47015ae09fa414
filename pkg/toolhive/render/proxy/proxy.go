// Package proxy renders what ToolHive's proxy runner reads and runs for an
// MCPServer (BuildMCPServer) or an MCPRemoteProxy (BuildRemoteProxy): the
// RunConfig ConfigMap, the runner's ServiceAccount and RoleBinding, the
// proxy Deployment and its Service, as ToolHive's operator builds them for
// the same manifest.
//
// A build is a pure function of the workload and its Input, the
// references already resolved: the same input gives the same bytes, no
// client, lister or clock is read, and a spec nothing can be built from is
// a *wiring.InvalidSpecError. The per-feature pieces are pkg/toolhive/wiring's.
package proxy

import (
	"cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// defaultProxyHost is the address the runner listens on in its pod when
// Input.ProxyHost is empty: ToolHive's operator's default.
const defaultProxyHost = "0.0.0.0"

// proxyHost is the runner's listen address the RunConfig names.
func (in Input) proxyHost() string { return cmp.Or(in.ProxyHost, defaultProxyHost) }

// authServerTLSPort says whether the workload exposes its embedded
// authorization server's TLS listener as a port, which the release decides.
func (in Input) authServerTLSPort(w wiring.AuthServerWiring) bool {
	return in.Release.AuthServerTLSPort && w.TLSListener()
}

// authServerCAChecksum adds to a pod template's annotations the checksum
// of the embedded authorization server's CA bundles, so that a new bundle
// rolls the pods as ToolHive's operator rolls them; nothing without a
// server or bundles.
func authServerCAChecksum(annotations map[string]string, w wiring.AuthServerWiring, checksum string) map[string]string {
	if w.Config != nil && checksum != "" {
		annotations[wiring.AuthServerCAChecksumAnnotation] = checksum
	}
	return annotations
}

// Input is everything a build depends on besides the workload: the
// configs its references resolve to (nil for a reference it does not
// make), what the controller is configured with, and the live accounts
// the spec names.
type Input struct {
	OIDC *thv1.MCPOIDCConfig
	// Tools is the referenced MCPToolConfig.
	Tools *thv1.MCPToolConfig
	// Authz is the referenced MCPAuthzConfig.
	Authz *thv1.MCPAuthzConfig
	// AuthzFile is the authorization file of spec.authzConfig of type
	// configMap, read from that ConfigMap.
	AuthzFile *wiring.AuthzFile
	// ExtAuth is the referenced MCPExternalAuthConfig.
	ExtAuth *thv1.MCPExternalAuthConfig
	// AuthServer is the MCPExternalAuthConfig spec.authServerRef names.
	AuthServer *thv1.MCPExternalAuthConfig
	// AuthServerCAChecksum is the checksum of the content of the CA
	// bundles the embedded authorization server names
	// (wiring.AuthServerCAChecksum), read from their ConfigMaps; "" for
	// none.
	AuthServerCAChecksum string
	// Telemetry is the referenced MCPTelemetryConfig.
	Telemetry *thv1.MCPTelemetryConfig
	// Webhooks is the referenced MCPWebhookConfig (an MCPServer's only).
	Webhooks    *thv1.MCPWebhookConfig
	RunnerImage string
	// DefaultRedis is the Redis a workload without one of its own falls
	// back to (--default-redis-*); nil for none.
	DefaultRedis *wiring.DefaultRedis
	// Release is the ToolHive release whose output is written.
	Release release.Release
	// UsageMetrics are ToolHive's operator's usage-metrics settings: the
	// runner's usage-metrics middleware is in the RunConfig unless they
	// opt out, and the release may pass them to the proxy container.
	UsageMetrics wiring.UsageMetrics
	// PullSecrets are the operator-wide pull secrets
	// (--default-image-pull-secrets), added after the workload's own to
	// its Deployment's pods and the accounts it writes.
	PullSecrets []corev1.LocalObjectReference
	// ProxyHost is the runner's listen address (--proxy-host); empty
	// means ToolHive's default, 0.0.0.0.
	ProxyHost string
	// RunnerClusterRole is the ClusterRole the runner's RoleBinding
	// grants (--proxy-runner-cluster-role or
	// --remote-proxy-runner-cluster-role); StdioRunnerClusterRole is a
	// stdio MCPServer's instead (--stdio-proxy-runner-cluster-role).
	RunnerClusterRole      string
	StdioRunnerClusterRole string
	// ServiceAccount is the live account spec.serviceAccount names, from
	// the lister; nil when there is none (see wiring.CheckServiceAccount).
	ServiceAccount *corev1.ServiceAccount
	// TemplateServiceAccount is the live account an MCPRemoteProxy's
	// podTemplateSpec names as serviceAccountName, checked like
	// ServiceAccount; nil when there is none.
	TemplateServiceAccount *corev1.ServiceAccount
}

// Output are the children of one proxy workload. The runner's account and
// binding are nil when an MCPRemoteProxy's spec names its own account (the
// user then owns the permissions); BackendServiceAccount is an MCPServer's
// backend pod account, nil when its spec names one.
type Output struct {
	RunConfig *corev1.ConfigMap
	// AuthzConfigMap holds an inline authorization config, nil without
	// one (wiring.InlineAuthzFile).
	AuthzConfigMap        *corev1.ConfigMap
	RunnerServiceAccount  *corev1.ServiceAccount
	RunnerRoleBinding     *rbacv1.RoleBinding
	BackendServiceAccount *corev1.ServiceAccount
	Deployment            *appsv1.Deployment
	Service               *corev1.Service
}
