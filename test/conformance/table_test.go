package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	thschema "github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// expectations are what a manifest of the table asks for, stated as the
// values ToolHive's runner.RunConfig must hold after decoding: dotted
// paths into its JSON encoding (oidc_config keeps Go field names).
var expectations = map[string]map[string]any{
	"fetch": {
		"name": "fetch", "container_name": "fetch", "base_name": "fetch", "transport": "stdio",
		"proxy_mode": "streamable-http", "port": 8080.0, "target_port": 8080.0, "host": "0.0.0.0",
		"image": "ghcr.io/stackloklabs/gofetch/server:1.0.1", "container_labels.toolhive-name": "fetch",
		"container_labels.toolhive-transport": "stdio", "container_labels.toolhive-port": "8080",
	},
	"stdio-sse": {
		"proxy_mode": "sse", "port": 8081.0, "cmd_args": []any{"--verbose", "--root=/data"},
		"env_vars.LOG_LEVEL": "debug",
	},
	"http-ports": {
		"transport": "streamable-http", "proxy_mode": "streamable-http", "port": 9090.0, "target_port": 3000.0,
		"trust_proxy_headers": true, "endpoint_prefix": "/tools/http-ports",
	},
	"sse-server": {"transport": "sse", "proxy_mode": "sse", "target_port": 8000.0},
	"oidc-full": {
		"oidc_config.Issuer": "http://idp.example.com/realms/mcp", "oidc_config.Audience": "mcp-api",
		"oidc_config.JWKSURL":          "http://idp.example.com/realms/mcp/certs",
		"oidc_config.IntrospectionURL": "http://idp.example.com/realms/mcp/introspect",
		"oidc_config.ClientID":         "mcp-proxy", "oidc_config.CACertPath": "/config/certs/idp-ca/ca.pem",
		"oidc_config.AuthTokenFile": "/var/run/secrets/idp/token", "oidc_config.AllowPrivateIP": true,
		"oidc_config.InsecureAllowHTTP": true, "oidc_config.ResourceURL": "https://mcp.example.com/oidc-full",
		"oidc_config.Scopes": []any{"openid", "mcp:tools"},
		"thv_ca_bundle":      "/config/certs/idp-ca/ca.pem", "jwks_auth_token_file": "/var/run/secrets/idp/token",
	},
	"oidc-min": {
		"oidc_config.Issuer": "https://idp.example.com", "oidc_config.Audience": "oidc-min",
		"oidc_config.ResourceURL": "http://oidc-min.%NS%.svc.cluster.local:8090",
	},
	"ksa-default": {
		"oidc_config.Issuer":         "https://kubernetes.default.svc",
		"oidc_config.CACertPath":     "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
		"oidc_config.AuthTokenFile":  "/var/run/secrets/kubernetes.io/serviceaccount/token",
		"oidc_config.AllowPrivateIP": true, "oidc_config.ResourceURL": "http://ksa-default.%NS%.svc.cluster.local:8080",
	},
	"ksa-external": {
		"oidc_config.Issuer": "https://oidc.eks.example.com/id/ABC", "oidc_config.JWKSURL": "https://oidc.eks.example.com/id/ABC/keys",
		"oidc_config.IntrospectionURL": "https://oidc.eks.example.com/id/ABC/introspect", "oidc_config.Scopes": []any{"mcp"},
	},
	"github": {"image": "ghcr.io/github/github-mcp-server:v0.5.0"},
	"remote-oidc": {
		"remote_url": "https://mcp.example.com/mcp", "container_name": "remote-oidc", "base_name": "remote-oidc",
		"port": 8088.0, "trust_proxy_headers": true, "endpoint_prefix": "/remote", "oidc_config.ClientID": "remote-proxy",
		"oidc_config.ResourceURL": "http://remote-oidc.%NS%.svc.cluster.local:8088",
	},
	"remote-sse": {
		"remote_url": "http://legacy.example.com/sse", "transport": "sse", "proxy_mode": "sse",
		"container_labels.toolhive-transport": "sse",
	},
	"tools-server": {
		"tools_filter":                      []any{"fetch_url", "search"},
		"tools_override.fetch.name":         "fetch_url",
		"tools_override.fetch.description":  "Fetches a URL and returns its content",
		"tools_override.lookup.description": "Looks a term up",
	},
	"tools-remote":     {"tools_filter": []any{"fetch_url", "search"}, "tools_override.fetch.name": "fetch_url"},
	"annotated-server": {"tools_override.fetch.name": "fetch_url"},
	"authz-ref": {
		"authz_config.version": "1.0", "authz_config.type": "cedarv1", "authz_config.cedar.group_claim_name": "groups",
		"authz_config.cedar.policies": []any{
			`permit(principal, action == Action::"call_tool", resource == Tool::"fetch");`,
			`forbid(principal, action == Action::"call_tool", resource == Tool::"delete");`,
		},
	},
	"authz-inline": {
		"authz_config.type": "cedarv1", "authz_config.cedar.entities_json": "[]",
		"authz_config.cedar.group_claim_name": "https://example.com/groups", "authz_config.cedar.group_entity_type": "Team",
	},
	"authz-remote": {"authz_config.type": "httpv1", "authz_config.pdp.http.url": "http://pdp.example.com:8080", "authz_config.pdp.claim_mapping": "standard"},
	// From a ConfigMap: the spec's claim settings over the file's.
	"authz-cm-cedar": {
		"authz_config.version": "1.0", "authz_config.type": "cedarv1", "authz_config.cedar.entities_json": "[]",
		"authz_config.cedar.group_claim_name": "https://example.com/groups", "authz_config.cedar.role_claim_name": "roles",
		"authz_config.cedar.group_entity_type": "Team",
	},
	"authz-cm-pdp":    {"authz_config.type": "httpv1", "authz_config.pdp.http.url": "http://pdp.example.com:9000", "authz_config.pdp.claim_mapping": "standard"},
	"authz-cm-remote": {"authz_config.type": "cedarv1", "authz_config.cedar.policies": []any{"permit(principal, action, resource);"}},
	// upstreamInject and xaa configure nothing on a proxy.
	"ext-upstream-inject": {"token_exchange_config": nil, "remote_auth_config": nil},
	"ext-xaa-remote":      {"token_exchange_config": nil, "remote_auth_config": nil},
	"remote-headers": {
		"remote_url": "http://mcp-gateway.tools.svc.cluster.local:8080/mcp",
		"header_forward.add_plaintext_headers.X-Tenant-ID": "team-a",
		"header_forward.add_plaintext_headers.X-Region":    "eu-west-1",
		"header_forward.add_headers_from_secret.X-API-Key": "HEADER_FORWARD_X_API_KEY_REMOTE_HEADERS",
	},
	"runtime-all": {
		// spec.permissionProfile (none) has no effect, as for ToolHive's
		// operator from v0.63.0 on: the default network profile.
		"volumes":                 []any{"/srv/data:/data:ro", "/var/cache/mcp:/cache"},
		"permission_profile.name": "network",
		"permission_profile.read": []any{"/srv/data:/data"}, "permission_profile.write": []any{"/var/cache/mcp:/cache"},
		"audit_config.maxDataSize": 1024.0, "audit_config.detectApplicationErrors": true,
		"max_request_body_size": 1048576.0, "scaling_config.backend_replicas": 2.0,
		"scaling_config.session_redis": map[string]any{"address": "redis.example.com:6379", "db": 3.0, "key_prefix": "mcp:runtime-all:"},
		"rate_limit_namespace":         "%NS%",
		"rate_limit_config.shared":     map[string]any{"maxTokens": 100.0, "refillPeriod": "1m0s"},
		"rate_limit_config.perUser":    map[string]any{"maxTokens": 10.0, "refillPeriod": "1m0s"},
		"rate_limit_config.tools": []any{
			map[string]any{"name": "fetch", "shared": map[string]any{"maxTokens": 5.0, "refillPeriod": "10s"}},
			map[string]any{"name": "search", "perUser": map[string]any{"maxTokens": 2.0, "refillPeriod": "1h30m0s"}},
		},
	},
	"volumes-only": {
		"volumes":                 []any{"/etc/mcp:/config:ro", "/srv/work:/work", "/srv/other:/work/"},
		"permission_profile.name": "network", "permission_profile.network.outbound.insecure_allow_all": true,
		"permission_profile.read": []any{"/etc/mcp:/config"}, "permission_profile.write": []any{"/srv/work:/work"},
	},
	"profile-network": {
		"permission_profile.name": "network", "scaling_config.backend_replicas": 0.0,
	},
	"profile-configmap": {
		"permission_profile.name": "network", "permission_profile.write": []any{"/srv/data:/data"}, "volumes": []any{"/srv/data:/data"},
	},
	"remote-audit": {
		"audit_config.maxDataSize": 1024.0, "scaling_config.session_redis.address": "redis.example.com:6379",
	},
	"extauth-exchange": {
		"token_exchange_config.token_url": "https://idp.example.com/oauth2/token", "token_exchange_config.client_id": "mcp-proxy",
		"token_exchange_config.audience": "backend-api", "token_exchange_config.scopes": []any{"read", "write"},
		"token_exchange_config.subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
		"token_exchange_config.header_strategy":    "replace",
	},
	"remote-exchange": {
		"token_exchange_config.token_url": "https://sts.example.com/token", "token_exchange_config.audience": "remote-api",
		"token_exchange_config.subject_token_type":         "urn:ietf:params:oauth:token-type:jwt",
		"token_exchange_config.header_strategy":            "custom",
		"token_exchange_config.external_token_header_name": "X-Upstream-Token",
	},
	"as-server": {
		"embedded_auth_server_config.schema_version": "v0.1.0", "embedded_auth_server_config.issuer": "https://auth.example.com",
		"embedded_auth_server_config.authorization_endpoint_base_url":       "https://login.example.com",
		"embedded_auth_server_config.signing_key_config.key_dir":            "/etc/toolhive/authserver/keys",
		"embedded_auth_server_config.signing_key_config.signing_key_file":   "key-0.pem",
		"embedded_auth_server_config.signing_key_config.fallback_key_files": []any{"key-1.pem"},
		"embedded_auth_server_config.hmac_secret_files":                     []any{"/etc/toolhive/authserver/hmac/hmac-0"},
		"embedded_auth_server_config.token_lifespans.access_token_lifespan": "30m",
		"embedded_auth_server_config.scopes_supported":                      []any{"openid", "offline_access"},
		"embedded_auth_server_config.baseline_client_scopes":                []any{"openid"},
		"embedded_auth_server_config.allowed_audiences":                     []any{"https://mcp.example.com/as-server"},
	},
	"as-legacy": {
		"embedded_auth_server_config.issuer":            "https://auth-min.example.com",
		"embedded_auth_server_config.allowed_audiences": []any{"https://mcp.example.com/as-legacy"},
		// No scopes on the reference: the authorization server's defaults.
		"oidc_config.Scopes": []any{"openid", "profile", "email", "offline_access"},
	},
	"as-remote": {
		"embedded_auth_server_config.issuer":            "https://auth-min.example.com",
		"embedded_auth_server_config.allowed_audiences": []any{"https://proxy.example.com/mcp"},
	},
	"remote-bearer": {"remote_url": "https://mcp.example.com/api", "remote_auth_config.bearer_token": "remote-token,target=bearer_token"},
	"aws-minimal-remote": {
		"aws_sts_config.region": "eu-west-1", "aws_sts_config.service": "aws-mcp",
		"aws_sts_config.fallback_role_arn": "arn:aws:iam::123456789012:role/mcp", "aws_sts_config.role_claim": "groups",
		"aws_sts_config.session_duration": 3600.0, "aws_sts_config.session_name_claim": "sub",
	},
	"aws-remote": {
		"aws_sts_config.region": "us-east-1", "aws_sts_config.service": "execute-api",
		"aws_sts_config.fallback_role_arn": "arn:aws:iam::123456789012:role/mcp-default", "aws_sts_config.role_claim": "roles",
		"aws_sts_config.session_duration": 900.0, "aws_sts_config.session_name_claim": "email",
		"aws_sts_config.role_mappings": []any{
			map[string]any{"claim": "admins", "role_arn": "arn:aws:iam::123456789012:role/mcp-admin", "priority": 1.0},
			map[string]any{"matcher": `claims["sub"] == "robot"`, "role_arn": "arn:aws:iam::123456789012:role/mcp-robot"},
		},
	},
	// A pod template shapes the pod only: the RunConfig is a plain one.
	// The template's env stays in the pod: env_vars holds only what
	// ToolHive's operator writes for any remote proxy.
	"remote-templated": {"remote_url": "https://mcp.example.com/mcp", "trust_proxy_headers": true, "container_name": "remote-templated",
		"env_vars": map[string]any{"MCP_TRANSPORT": "streamable-http"}},
	"telemetry-full": {
		"telemetry_config.endpoint": "collector.monitoring.svc:4318", "telemetry_config.serviceName": "fetch-traces",
		"telemetry_config.tracingEnabled": true, "telemetry_config.metricsEnabled": true, "telemetry_config.samplingRate": "0.25",
		"telemetry_config.headers": map[string]any{"X-Tenant": "team-a"}, "telemetry_config.useLegacyAttributes": true,
		"telemetry_config.customAttributes": map[string]any{"deployment.environment": "staging"},
		"telemetry_config.caCertPath":       "/config/certs/otel/collector-ca/ca.crt",
	},
	"telemetry-prometheus": {
		"telemetry_config.serviceName": "telemetry-prometheus", "telemetry_config.enablePrometheusMetricsPath": true,
		"telemetry_config.metricsOnTransportPort": false, "telemetry_config.tracingEnabled": false,
		"telemetry_config.useLegacyAttributes": false,
	},
	// Each Secret key is a file under /etc/toolhive/webhooks/<identifier>,
	// the identifier ending in a hash of "<secret>/<key>"; the timeout is
	// in nanoseconds, 0 when unset (the runner then waits 10s).
	"webhooks-full": {
		"validating_webhooks": []any{map[string]any{
			"name": "policy-check", "url": "https://policy.webhooks.svc/validate", "timeout": 5e9, "failure_policy": "ignore",
			"hmac_secret_ref": "/etc/toolhive/webhooks/webhook_validating_policy_check_hmac_d349c346/hmac",
			"tls_config": map[string]any{
				"ca_bundle_path":   "/etc/toolhive/webhooks/webhook_validating_policy_check_tls_ca_cd2771e6/ca.crt",
				"client_cert_path": "/etc/toolhive/webhooks/webhook_validating_policy_check_tls_client_cert_8e221ed9/tls.crt",
				"client_key_path":  "/etc/toolhive/webhooks/webhook_validating_policy_check_tls_client_key_ffd96abd/tls.key",
			},
		}},
		"mutating_webhooks": []any{map[string]any{
			"name": "redact", "url": "https://redact.webhooks.svc/mutate", "timeout": 0.0, "failure_policy": "fail",
			"hmac_secret_ref": "/etc/toolhive/webhooks/webhook_mutating_redact_hmac_d349c346/hmac",
		}},
	},
	"webhooks-insecure": {
		"validating_webhooks": []any{map[string]any{
			"name": "audit", "url": "http://audit.webhooks.svc:8080/validate", "timeout": 0.0, "failure_policy": "fail",
			"tls_config": map[string]any{"insecure_skip_verify": true},
		}},
	},
	"telemetry-remote": {
		"telemetry_config.serviceName": "remote-svc", "telemetry_config.tracingEnabled": false,
		"telemetry_config.metricsEnabled": false, "telemetry_config.useLegacyAttributes": false,
	},
}

// refused are workloads of the table whose spec hivekeeper refuses, with
// the ConfigurationValid reason: no RunConfig is written for them.
var refused = map[string]string{
	"remote-private": thv1.ReasonRemoteURLInvalid,
}

// refusedServers are the table's MCPServers hivekeeper refuses, as
// ToolHive's operator does, by the condition that says why.
var refusedServers = map[string]string{
	"asv-delegate-audience-server": thv1.ConditionAuthServerRefValidated,
}

// absent are keys whose absence the table states: secrets never reach a
// RunConfig, and a server without a reference has no OIDC block.
var absent = map[string][]string{
	"fetch":  {"oidc_config", "thv_ca_bundle"},
	"github": {"oidc_config"},
	// The override with only annotations is not in the RunConfig.
	"annotated-server": {"tools_override.search"},
	// Audit off and memory sessions write nothing; only the backend
	// replicas make a scaling_config.
	"profile-network": {"audit_config", "scaling_config.session_redis", "rate_limit_config", "max_request_body_size", "permission_profile_name_or_path"},
	// A permission profile is named by no spec, as for ToolHive's operator
	// from v0.63.0 on.
	"profile-configmap": {"permission_profile_name_or_path"},
	"runtime-all":       {"permission_profile_name_or_path"},
	// Unauthenticated and headerInjection configure nothing in the
	// RunConfig, and a token exchange's client secret is never in it.
	"extauth-exchange":         {"token_exchange_config.client_secret", "remote_auth_config"},
	"extauth-none":             {"token_exchange_config", "remote_auth_config"},
	"extauth-header-injection": {"token_exchange_config", "remote_auth_config", "header_forward"},
	"remote-none":              {"token_exchange_config", "remote_auth_config"},
	"remote-header-injection":  {"token_exchange_config", "remote_auth_config", "header_forward"},
	"webhooks-insecure":        {"mutating_webhooks"},
	"remote-templated":         {"oidc_config", "volumes"},
	// subjectProviderName is vMCP's; ToolHive's operator does not write it.
	"aws-remote": {"aws_sts_config.subject_provider_name", "token_exchange_config", "remote_auth_config"},
	// OTLP switched off: nothing of it reaches the runner.
	"telemetry-remote": {"telemetry_config.endpoint", "telemetry_config.samplingRate"},
}

// TestTable runs every manifest of testdata/table through hivekeeper and
// judges the result with ToolHive's own code.
func TestTable(t *testing.T) {
	requireToolHive(t)
	env := framework.Get(t)
	env.StartControllers(t, app.Options{Workers: 4})
	files, err := filepath.Glob("testdata/table/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no table manifests: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			ns := env.Namespace(t)
			objs := applyStrict(t, env, ns, file)
			for _, o := range objs {
				switch o.GetKind() {
				case "MCPServer":
					if cond, ok := refusedServers[o.GetName()]; ok {
						checkServerRefused(t, env, ns, o.GetName(), cond)
						continue
					}
					checkRunConfig(t, env, ns, naming.RunConfigName(o.GetName()), o.GetName())
				case "MCPRemoteProxy":
					if reason, ok := refused[o.GetName()]; ok {
						checkRefused(t, env, ns, o.GetName(), reason)
						continue
					}
					checkRunConfig(t, env, ns, naming.RunConfigName(o.GetName()), o.GetName())
				case "VirtualMCPServer":
					checkVMCPConfig(t, env, ns, o.GetName())
				}
			}
		})
	}
}

// applyStrict creates every object of file in ns with strict field
// validation, as kubectl does by default, so a field the schema would
// prune is an error rather than a silent loss. It returns what it read.
func applyStrict(t *testing.T, env *framework.Env, ns, file string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := framework.ReadManifests(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, err := createStrict(env, ns, o); err != nil {
			t.Fatalf("%s: creating %s %s: %v", file, o.GetKind(), o.GetName(), err)
		}
	}
	return objs
}

// applyTemplate is applyStrict on a manifest with ${VAR} placeholders for
// what only exists at run time (a loopback URL); every placeholder must
// have a value in vars.
func applyTemplate(t *testing.T, env *framework.Env, ns, file string, vars map[string]string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	expanded := os.Expand(string(raw), func(k string) string {
		v, ok := vars[k]
		if !ok {
			t.Fatalf("%s: no value for ${%s}", file, k)
		}
		return v
	})
	out := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(out, []byte(expanded), 0o600); err != nil {
		t.Fatal(err)
	}
	return applyStrict(t, env, ns, out)
}

// createStrict creates o in ns with strict field validation and returns
// the object as the API server stored it.
func createStrict(env *framework.Env, ns string, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return createWith(env, ns, o, metav1.FieldValidationStrict)
}

// createWith creates o in ns with the given field validation.
func createWith(env *framework.Env, ns string, o *unstructured.Unstructured, validation string) (*unstructured.Unstructured, error) {
	return toolhive.Create(context.Background(), env.Dynamic, ns, o, validation)
}

// waitFor polls get until the object exists and returns it.
func waitFor[T any](t *testing.T, get func() (T, error), what string) T {
	t.Helper()
	var obj T
	framework.Eventually(t, 90*time.Second, func() (bool, error) {
		got, err := get()
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		obj = got
		return err == nil, err
	}, what)
	return obj
}

// waitConfigMap waits for hivekeeper to write a ConfigMap.
func waitConfigMap(t *testing.T, env *framework.Env, ns, name string) *corev1.ConfigMap {
	t.Helper()
	return waitFor(t, func() (*corev1.ConfigMap, error) {
		return env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	}, "ConfigMap "+ns+"/"+name+" written by hivekeeper")
}

// checkRunConfig decodes a RunConfig with ToolHive's runner.RunConfig
// (strict, every level) and checks the values the manifest asked for.
func checkRunConfig(t *testing.T, env *framework.Env, ns, cmName, workload string) map[string]any {
	t.Helper()
	cm := waitConfigMap(t, env, ns, cmName)
	file := filepath.Join(t.TempDir(), thschema.Key)
	if err := os.WriteFile(file, []byte(cm.Data[thschema.Key]), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(thvcheck, "runconfig", file)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: ToolHive's runner.RunConfig rejects the RunConfig: %v: %s\n%s", workload, err, stderr.String(), cm.Data[thschema.Key])
	}
	var decoded map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	for path, want := range expectations[workload] {
		if s, ok := want.(string); ok {
			want = strings.ReplaceAll(s, "%NS%", ns)
		}
		got, _ := lookup(decoded, path)
		if !jsonEqual(got, want) {
			t.Errorf("%s: ToolHive decodes %s = %v, want %v", workload, path, got, want)
		}
	}
	for _, path := range absent[workload] {
		if v, ok := lookup(decoded, path); ok && v != nil && v != "" {
			t.Errorf("%s: %s = %v, want it absent", workload, path, v)
		}
	}
	if strings.Contains(cm.Data[thschema.Key], "not-a-real-") {
		t.Errorf("%s: a secret value reached the RunConfig ConfigMap", workload)
	}
	return decoded
}

// checkRefused waits for hivekeeper to refuse an MCPRemoteProxy with
// ConfigurationValid=False and reason, and checks that it wrote no
// RunConfig.
func checkRefused(t *testing.T, env *framework.Env, ns, name, reason string) {
	t.Helper()
	ctx := context.Background()
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		p, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionConfigurationValid)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason, fmt.Errorf("status %+v", p.Status)
	}, "%s refused with %s", name, reason)
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, naming.RunConfigName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: the RunConfig of a refused proxy: %v, want NotFound", name, err)
	}
}

// checkServerRefused waits for an MCPServer's condition cond to turn
// False and checks that no RunConfig was written for it.
func checkServerRefused(t *testing.T, env *framework.Env, ns, name, cond string) {
	t.Helper()
	ctx := context.Background()
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return meta.IsStatusConditionFalse(s.Status.Conditions, cond), fmt.Errorf("status %+v", s.Status)
	}, "%s refused (%s=False)", name, cond)
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, naming.RunConfigName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: the RunConfig of a refused server: %v, want NotFound", name, err)
	}
}

// checkVMCPConfig runs ToolHive's `vmcp validate` on the config, with the
// vmcp container's environment as a pod would have it (validate reads the
// variables config.yaml names, such as a backend's client secret), and
// checks the values vmcpExpectations states.
func checkVMCPConfig(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(name))
	if want := vmcpBackendCount[name]; want > 0 {
		// Members join asynchronously (an entry once its checks pass):
		// wait for all of them and for the pod that runs that config.
		framework.Eventually(t, 90*time.Second, func() (bool, error) {
			var err error
			if cm, err = env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), naming.VMCPConfigMapName(name), metav1.GetOptions{}); err != nil {
				return false, err
			}
			var cfg struct {
				Backends []any `json:"backends"`
			}
			if err := yaml.Unmarshal([]byte(cm.Data[naming.VMCPConfigKey]), &cfg); err != nil || len(cfg.Backends) != want {
				return false, err
			}
			dep, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == cm.Annotations[thschema.ChecksumAnnotation], err
		}, "vMCP "+ns+"/"+name+" with all its backends")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, naming.VMCPConfigKey)
	if err := os.WriteFile(file, []byte(cm.Data[naming.VMCPConfigKey]), 0o600); err != nil {
		t.Fatal(err)
	}
	c, tmpl := deploymentContainer(t, env, ns, name, naming.VMCPContainerName)
	validate := exec.Command(filepath.Join(toolhiveBin, "vmcp"), "validate", "--config", file)
	validate.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, containerEnv(t, env, ns, c, tmpl.Annotations)...)
	out, err := validate.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: ToolHive's vmcp validate rejects the config: %v\n%s\nconfig:\n%s", name, err, out, cm.Data[naming.VMCPConfigKey])
	}
	if strings.Contains(cm.Data[naming.VMCPConfigKey], "not-a-real-") {
		t.Errorf("%s: a secret value reached the vMCP ConfigMap", name)
	}
	var decoded map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data[naming.VMCPConfigKey]), &decoded); err != nil {
		t.Fatal(err)
	}
	for path, want := range vmcpExpectations[name] {
		// NAMESPACE in an expected value stands for the case's namespace.
		raw, _ := json.Marshal(want)
		_ = json.Unmarshal(bytes.ReplaceAll(raw, []byte("NAMESPACE"), []byte(ns)), &want)
		if got, _ := lookup(decoded, path); !jsonEqual(got, want) {
			t.Errorf("%s: config.yaml %s = %v, want %v", name, path, got, want)
		}
	}
	// The embedded authorization server's configuration, which vmcp serve
	// reads beside config.yaml (vmcp validate does not read it; the
	// differential test decodes it with ToolHive's type).
	as, hasAS := cm.Data[naming.VMCPAuthServerConfigKey]
	if want := vmcpAuthServerExpectations[name]; len(want) > 0 || hasAS {
		if strings.Contains(as, "not-a-real-") {
			t.Errorf("%s: a secret value reached %s", name, naming.VMCPAuthServerConfigKey)
		}
		var decodedAS map[string]any
		if err := yaml.Unmarshal([]byte(as), &decodedAS); err != nil {
			t.Fatal(err)
		}
		for path, want := range want {
			if got, _ := lookup(decodedAS, path); !jsonEqual(got, want) {
				t.Errorf("%s: %s %s = %v, want %v", name, naming.VMCPAuthServerConfigKey, path, got, want)
			}
		}
	}
	if want := vmcpSecretEnv[name]; len(want) > 0 {
		for variable, secret := range want {
			found := false
			for _, e := range c.Env {
				if e.Name == variable && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
					e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key == secret && e.Value == "" {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no env %s from secretKeyRef %s in %+v", name, variable, secret, c.Env)
			}
		}
	}
}

// vmcpExpectations are values of a VirtualMCPServer's config.yaml, by
// dotted path, as ToolHive's operator builds them for the same manifest.
var vmcpExpectations = map[string]map[string]any{
	"authz-cm-vmcp": {
		"incomingAuth.authz.type": "cedar", "incomingAuth.authz.entitiesJson": "[]", "incomingAuth.authz.groupClaimName": "groups",
		"incomingAuth.authz.roleClaimName": "https://example.com/roles", "incomingAuth.authz.primaryUpstreamProvider": nil,
	},
	// The deprecated inline field names the second upstream.
	"pu-vmcp": {"incomingAuth.authz.primaryUpstreamProvider": "partner"},
	"cfg-vmcp": {
		"incomingAuth.authz.type":                                         "cedar",
		"incomingAuth.authz.groupClaimName":                               "groups",
		"incomingAuth.authz.policies":                                     []any{`permit(principal, action == Action::"call_tool", resource == Tool::"fetch_get_page");`},
		"outgoingAuth.source":                                             "inline",
		"outgoingAuth.default.type":                                       "unauthenticated",
		"outgoingAuth.backends.cfg-github.type":                           "header_injection",
		"outgoingAuth.backends.cfg-github.headerInjection.headerName":     "Authorization",
		"outgoingAuth.backends.cfg-github.headerInjection.headerValueEnv": "TOOLHIVE_HEADER_INJECTION_VALUE_CFG_GITHUB_TOKEN",
		"outgoingAuth.backends.cfg-fetch.tokenExchange.clientSecretEnv":   "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_CFG_EXCHANGE",
		"outgoingAuth.backends.cfg-fetch.tokenExchange.subjectTokenType":  "urn:ietf:params:oauth:token-type:access_token",
		"passthroughHeaders":                                              []any{"X-Api-Key"},
		"telemetry.serviceName":                                           "cfg-gateway",
		"telemetry.endpoint":                                              "collector.monitoring.svc:4318",
		"telemetry.samplingRate":                                          "0.25",
		"aggregation.conflictResolution":                                  "priority",
		"aggregation.conflictResolutionConfig":                            map[string]any{"prefixFormat": "{workload}_", "priorityOrder": []any{"cfg-fetch", "cfg-github"}},
		"aggregation.tools":                                               []any{map[string]any{"workload": "cfg-fetch", "filter": []any{"fetch"}, "overrides": map[string]any{"fetch": map[string]any{"name": "get_page", "description": "Fetch a web page"}}}, map[string]any{"workload": "cfg-github", "filter": []any{"get_issue"}, "overrides": map[string]any{"get_issue": map[string]any{"description": "Read one issue"}}}},
		"operational.timeouts.default":                                    "1m0s",
		"operational.timeouts.perWorkload":                                map[string]any{"cfg-github": "1m30s"},
		"operational.failureHandling.unhealthyThreshold":                  5,
		"operational.failureHandling.partialFailureMode":                  "fail",
	},
	"ent-vmcp": {
		"outgoingAuth.backends.ent-local.type":                          "token_exchange",
		"outgoingAuth.backends.ent-local.tokenExchange.clientSecretEnv": "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_ENT_EXCHANGE",
		"outgoingAuth.backends.ent-far.type":                            "header_injection",
		"outgoingAuth.backends.ent-far.headerInjection.headerValueEnv":  "TOOLHIVE_HEADER_INJECTION_VALUE_ENT_API_KEY",
		"backends": []any{
			map[string]any{"name": "ent-far", "url": "https://mcp.remote.example/mcp", "transport": "streamable-http", "type": "entry",
				"caBundlePath": "/etc/toolhive/ca-bundles/ent-far/ca.crt", "metadata": map[string]any{"group": "ent", "namespace": "NAMESPACE",
					"remote_url": "https://mcp.remote.example/mcp", "tool_type": "mcp", "workload_type": "server_entry"}},
			map[string]any{"name": "ent-local", "url": "http://mcp-ent-local-proxy.NAMESPACE.svc.cluster.local:8080/mcp", "transport": "streamable-http",
				"metadata": map[string]any{"group": "ent", "namespace": "NAMESPACE", "tool_type": "mcp", "workload_type": "mcp_server"}},
		},
	},
	"vas-vmcp": {
		"outgoingAuth.backends.vas-aws.type":                            "aws_sts",
		"outgoingAuth.backends.vas-aws.awsSts.region":                   "eu-west-1",
		"outgoingAuth.backends.vas-partner.type":                        "upstream_inject",
		"outgoingAuth.backends.vas-partner.upstreamInject.providerName": "partner",
		"incomingAuth.oidc.issuer":                                      "https://auth.example.com",
		"incomingAuth.oidc.resource":                                    "https://vmcp.example.com/mcp",
		"incomingAuth.authz.primaryUpstreamProvider":                    "corp-idp",
		"outgoingAuth.default.type":                                     "token_exchange",
		// Discovered mode: the operator names no subject provider, vmcp
		// names the first upstream when it starts.
		"outgoingAuth.source": "discovered",
		"outgoingAuth.default.tokenExchange.subjectProviderName":   nil,
		"outgoingAuth.backends.vas-aws.awsSts.subjectProviderName": nil,
		"outgoingAuth.default.tokenExchange.clientSecretEnv":       "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_VAS_EXCHANGE",
	},
	"cfg-inline-authz": {
		"incomingAuth.authz":           map[string]any{"type": "cedar", "entitiesJson": "[]", "policies": []any{"permit(principal, action, resource);"}, "roleClaimName": "roles"},
		"outgoingAuth":                 map[string]any{"source": "discovered"},
		"aggregation":                  map[string]any{"conflictResolution": "prefix", "conflictResolutionConfig": map[string]any{"prefixFormat": "{workload}_"}},
		"operational.timeouts.default": "30s",
	},
	// Cross-app access: a subject provider named is kept; the member
	// whose own xaa config names none beside two upstreams is not served.
	"xsp-vmcp": {
		"outgoingAuth.default.xaa.subjectProviderName": "partner",
		"outgoingAuth.default.xaa.idpClientSecretEnv":  "TOOLHIVE_XAA_IDP_CLIENT_SECRET_XSP_DEFAULT",
		"outgoingAuth.backends":                        nil,
	},
	// In discovered mode too the strategies name their variables.
	"xdi-vmcp": {
		"outgoingAuth.default.xaa.idpClientSecretEnv":               "TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_DEFAULT",
		"outgoingAuth.default.xaa.targetClientSecretEnv":            "TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XDI_DEFAULT",
		"outgoingAuth.backends.xdi-plain.xaa.idpClientSecretEnv":    "TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_BACKEND",
		"outgoingAuth.backends.xdi-plain.xaa.targetClientSecretEnv": nil,
	},
}

// vmcpBackendCount is the number of backends a vMCP's config settles
// with, for the cases whose members join asynchronously.
var vmcpBackendCount = map[string]int{"ent-vmcp": 2, "xsp-vmcp": 1}

// vmcpAuthServerExpectations are values of a VirtualMCPServer's
// authserver-config.yaml, by dotted path.
var vmcpAuthServerExpectations = map[string]map[string]any{
	"vas-vmcp": {
		"issuer":                          "https://auth.example.com",
		"authorization_endpoint_base_url": "https://login.example.com",
		"allowed_audiences":               []any{"https://vmcp.example.com/mcp"},
		"scopes_supported":                []any{"openid", "offline_access"},
		"baseline_client_scopes":          []any{"openid"},
		"signing_key_config": map[string]any{"key_dir": "/etc/toolhive/authserver/keys", "signing_key_file": "key-0.pem",
			"fallback_key_files": []any{"key-1.pem"}},
		"hmac_secret_files": []any{"/etc/toolhive/authserver/hmac/hmac-0"},
		"token_lifespans":   map[string]any{"access_token_lifespan": "30m"},
		"upstreams": []any{
			map[string]any{"name": "corp-idp", "type": "oidc", "oidc_config": map[string]any{"issuer_url": "https://idp.example.com",
				"client_id": "vmcp-login", "client_secret_env_var": "TOOLHIVE_UPSTREAM_CLIENT_SECRET_CORP_IDP",
				"redirect_uri": "https://vmcp.example.com/mcp/oauth/callback", "scopes": []any{"openid", "email"},
				"additional_authorization_params": map[string]any{"prompt": "consent"}, "subject_claim": "email"}},
			map[string]any{"name": "partner", "type": "oidc", "oidc_config": map[string]any{"issuer_url": "https://partner.example.com",
				"client_id": "vmcp-partner", "redirect_uri": "https://vmcp.example.com/partner/callback"}},
		},
	},
}

// vmcpSecretEnv are the vmcp container's variables that must come from a
// Secret ("<secret>/<key>"), never a value.
var vmcpSecretEnv = map[string]map[string]string{
	"vas-vmcp": {
		"TOOLHIVE_UPSTREAM_CLIENT_SECRET_CORP_IDP":           "vas-keys/upstream",
		"TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_VAS_EXCHANGE": "vas-keys/exchange",
	},
	"cfg-vmcp": {
		"TOOLHIVE_HEADER_INJECTION_VALUE_CFG_GITHUB_TOKEN":   "cfg-github-pat/token",
		"TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_CFG_EXCHANGE": "cfg-idp-client/secret",
	},
	"xin-vmcp": {
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XIN_DEFAULT":    "xin-clients/idp",
		"TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XIN_DEFAULT": "xin-clients/target",
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XIN_BACKEND":    "xin-clients/idp",
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XIN_OWN":        "xin-clients/idp",
		"TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XIN_OWN":     "xin-clients/target",
	},
	"xdi-vmcp": {
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_DEFAULT":    "xdi-clients/idp",
		"TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XDI_DEFAULT": "xdi-clients/target",
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_BACKEND":    "xdi-clients/idp",
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_OWN":        "xdi-clients/idp",
	},
	"ent-vmcp": {
		"TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_ENT_EXCHANGE":   "ent-idp-client/secret",
		"TOOLHIVE_HEADER_INJECTION_VALUE_ENT_API_KEY":          "ent-remote-key/key",
		"TOOLHIVE_SECRET_HEADER_FORWARD_X_TRACE_TOKEN_ENT_FAR": "ent-trace/token",
	},
}

// lookup follows a dotted path through decoded JSON.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
