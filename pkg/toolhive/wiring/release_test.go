package wiring

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
)

func mustRelease(t *testing.T, v string) release.Release {
	t.Helper()
	r, err := release.Lookup(v)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ToolHive v0.66.0's operator passes its usage-metrics settings to every
// workload container, after UNSTRUCTURED_LOGS and before the secrets
// provider, never over a variable the spec sets: each opt-out it has, or
// else the installation's id. v0.63.0's passes nothing.
func TestUsageMetricsWorkloadEnv(t *testing.T) {
	v063, v066 := mustRelease(t, "v0.63.0"), mustRelease(t, "v0.66.0")
	names := func(env []corev1.EnvVar) string {
		var out []string
		for _, e := range env {
			out = append(out, e.Name+"="+e.Value)
		}
		return strings.Join(out, " ")
	}
	const defaults = "XDG_CONFIG_HOME=/tmp HOME=/tmp TOOLHIVE_RUNTIME=kubernetes UNSTRUCTURED_LOGS=false"
	secret := []corev1.EnvVar{{Name: "TOOLHIVE_SECRET_token", Value: "x"}}
	for _, c := range []struct {
		name  string
		usage UsageMetrics
		r     release.Release
		env   []corev1.EnvVar
		want  string
	}{
		{"the id", UsageMetrics{AnonymousID: "id-1"}, v066, secret,
			"TOOLHIVE_SECRET_token=x " + defaults + " TOOLHIVE_ANONYMOUS_ID=id-1 TOOLHIVE_SECRETS_PROVIDER=environment"},
		{"no id known", UsageMetrics{}, v066, nil, defaults},
		{"update check skipped", UsageMetrics{SkipUpdateCheck: true, AnonymousID: "id-1"}, v066, nil, defaults + " TOOLHIVE_SKIP_UPDATE_CHECK=true"},
		{"usage metrics off", UsageMetrics{Disabled: true, AnonymousID: "id-1"}, v066, nil, defaults + " TOOLHIVE_USAGE_METRICS_ENABLED=false"},
		{"both", UsageMetrics{SkipUpdateCheck: true, Disabled: true}, v066, nil,
			defaults + " TOOLHIVE_SKIP_UPDATE_CHECK=true TOOLHIVE_USAGE_METRICS_ENABLED=false"},
		{"the spec's own value wins", UsageMetrics{AnonymousID: "id-1"}, v066, []corev1.EnvVar{{Name: EnvAnonymousID, Value: "mine"}},
			"TOOLHIVE_ANONYMOUS_ID=mine " + defaults},
		{"v0.63.0 passes nothing", UsageMetrics{SkipUpdateCheck: true, Disabled: true, AnonymousID: "id-1"}, v063, nil, defaults},
	} {
		if got := names(RequiredEnv(c.env, c.usage.WorkloadEnv(c.r))); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if (UsageMetrics{AnonymousID: "x"}).Middleware() != true || (UsageMetrics{SkipUpdateCheck: true}).Middleware() || (UsageMetrics{Disabled: true}).Middleware() {
		t.Error("the middleware is on unless the operator opted out or turned usage metrics off")
	}
}

// An https-auth port for the TLS listener, as ToolHive v0.66.0 writes it,
// on the container and (appProtocol https) the Service.
func TestAuthServerTLSPorts(t *testing.T) {
	got, _ := json.Marshal(ContainerPorts("http", 8080, true))
	if want := `[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"https-auth","containerPort":8443,"protocol":"TCP"}]`; string(got) != want {
		t.Errorf("container ports\n got %s\nwant %s", got, want)
	}
	got, _ = json.Marshal(Service(ServiceSpec{PortName: "http", Port: 8080, TargetPort: 8080, AuthServerTLS: true}).Spec.Ports)
	if want := `[{"name":"http","protocol":"TCP","port":8080,"targetPort":8080},{"name":"https-auth","protocol":"TCP","appProtocol":"https","port":8443,"targetPort":8443}]`; string(got) != want {
		t.Errorf("service ports\n got %s\nwant %s", got, want)
	}
	if n := len(ContainerPorts("http", 8080, false)); n != 1 {
		t.Errorf("%d container ports without the listener", n)
	}
}

// SPIFFE, as each release's operator treats it: v0.63.0 refuses every
// trust domain as not yet enforced; v0.66.0 refuses a bundle source other
// than a file, SPIFFE X.509 with an http issuer, and a SPIFFE client id
// that is a delegate client's, with its messages; a file-bundle trust
// domain passes its checks and is then refused only as what hivekeeper
// does not deploy yet.
func TestSPIFFEByRelease(t *testing.T) {
	v063, v066 := mustRelease(t, "v0.63.0"), mustRelease(t, "v0.66.0")
	oidc := &ResolvedOIDC{Audience: "https://mcp", ResourceURL: "https://mcp"}
	const up = `"upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp","clientId":"c"}}]`
	const listener = `"tlsListener":{"certificateSecretRef":{"name":"t","key":"c"},"privateKeySecretRef":{"name":"t","key":"k"}}`
	domain := func(source string) string {
		return `"spiffeTrustDomains":[{"name":"td","trustDomain":"example.org","methods":["spiffe_jwt","spiffe_x509"],"bundleSource":` + source + `}]`
	}
	const file = `{"type":"file","file":{"configMapName":"b","configMapKey":"bundle.json"}}`
	const workloadAPI = `{"type":"workload_api","workloadAPI":{}}`
	clients := func(method string) string {
		return `"inboundGrants":{"spiffeClientAuth":[{"trustDomainRef":"td","principalPattern":"spiffe://example.org/a","clientId":"agent",` +
			`"methods":["` + method + `"],"audiences":["https://mcp"],"scopes":["openid"]}]}`
	}
	const build = "failed to build embedded auth server config: invalid embedded auth server delegate clients or trusted issuers: "
	for _, c := range []struct {
		name, raw string
		r         release.Release
		want      string
	}{
		{"v0.63.0 file", `{"issuer":"https://auth",` + listener + `,` + up + `,` + domain(file) + `}`, v063,
			build + "spiffe_trust_domains: SPIFFE client authentication is not yet enforced"},
		{"v0.66.0 workload api", `{"issuer":"https://auth",` + listener + `,` + up + `,` + domain(workloadAPI) + `}`, v066,
			build + `spiffe_trust_domains[0] "td" bundle_source: type "workload_api" is not supported by this build; only "file" is supported`},
		{"v0.66.0 x509 over http", `{"issuer":"http://auth",` + listener + `,` + up + `,` + domain(file) + `,` + clients("spiffe_x509") + `}`, v066,
			build + "SPIFFE X.509 authentication requires an https issuer"},
		{"v0.66.0 delegate id", `{"issuer":"https://auth",` + listener + `,` + up + `,` + domain(file) + `,"delegateClients":[{"clientId":"agent"}],` +
			clients("spiffe_jwt") + `}`, v066,
			build + `client_id "agent" is configured both as a SPIFFE client association and as a delegate client`},
	} {
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, embeddedConfig(t, c.raw), nil, oidc, 8080, c.r)
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || !strings.Contains(invalid.Message, c.want) {
			t.Errorf("%s: %v\nwant %q", c.name, err, c.want)
		}
	}

	// The config itself, from v0.66.0 on.
	cfg := embeddedConfig(t, `{"issuer":"http://auth",`+up+`,`+domain(workloadAPI)+`,`+clients("spiffe_x509")+`}`)
	if got := ExternalAuthConfigReleaseChecks(cfg, v063); got != nil {
		t.Errorf("v0.63.0: %q, want none", got)
	}
	got := strings.Join(ExternalAuthConfigReleaseChecks(cfg, v066), "; ")
	if want := `SPIFFE X.509 authentication requires an https issuer; ` +
		`spiffeTrustDomains[0].bundleSource: type "workload_api" is not supported by this build; only "file" is supported`; got != want {
		t.Errorf("v0.66.0:\n got %s\nwant %s", got, want)
	}
}
