package wiring

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

func extAuthConfig(name string, spec thv1.MCPExternalAuthConfigSpec) *thv1.MCPExternalAuthConfig {
	return &thv1.MCPExternalAuthConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Generation: 1, ResourceVersion: "7"},
		Spec:       spec,
	}
}

func secretRef(name, key string) *thv1.SecretKeyRef { return &thv1.SecretKeyRef{Name: name, Key: key} }

func awsSts(a thv1.AWSStsConfig) thv1.MCPExternalAuthConfigSpec {
	return thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeAWSSts, AWSSts: &a}
}

// goodAWS sets every field of an awsSts block.
var goodAWS = thv1.AWSStsConfig{Region: "us-east-1", Service: "execute-api",
	FallbackRoleArn: "arn:aws:iam::123456789012:role/mcp-default",
	RoleMappings: []thv1.AWSRoleMapping{
		{Claim: "admins", RoleArn: "arn:aws:iam::123456789012:role/mcp-admin", Priority: ptr.To[int32](1)},
		{Matcher: `claims["sub"] == "robot"`, RoleArn: "arn:aws:iam::123456789012:role/mcp-robot"},
	},
	RoleClaim: "roles", SessionDuration: ptr.To[int32](900), SessionNameClaim: "email", SubjectProviderName: "okta"}

func tokenExchange(te thv1.TokenExchangeConfig) thv1.MCPExternalAuthConfigSpec {
	return thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeTokenExchange, TokenExchange: &te}
}

// What the schema does not catch, or a config stored before it could,
// is a validation error of the config: the workloads that reference it
// wait instead of deploying a proxy that fails every request.
func TestValidateExternalAuthConfig(t *testing.T) {
	goodTE := thv1.TokenExchangeConfig{TokenURL: "https://idp.example.com/token", Audience: "backend",
		ClientID: "c", ClientSecretRef: secretRef("s", "k"), Scopes: []string{"read", "write"}, SubjectTokenType: "id_token",
		ExternalTokenHeaderName: "X-Upstream-Token"}
	for _, tc := range []struct {
		name string
		spec thv1.MCPExternalAuthConfigSpec
		want []string // substrings, one per error
	}{
		{"tokenExchange", tokenExchange(goodTE), nil},
		{"tokenExchange full URN", tokenExchange(thv1.TokenExchangeConfig{TokenURL: "http://idp/token", Audience: "a",
			SubjectTokenType: "urn:ietf:params:oauth:token-type:jwt"}), nil},
		{"headerInjection", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeHeaderInjection,
			HeaderInjection: &thv1.HeaderInjectionConfig{HeaderName: "X-API-Key", ValueSecretRef: secretRef("s", "k")}}, nil},
		{"bearerToken", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeBearerToken,
			BearerToken: &thv1.BearerTokenConfig{TokenSecretRef: secretRef("s", "k")}}, nil},
		{"unauthenticated", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}, nil},
		{"a type hivekeeper does not apply is still a valid config", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeXAA, XAA: &thv1.XAASpec{}}, nil},
		{"awsSts", awsSts(goodAWS), nil},
		{"awsSts, fallback role only", awsSts(thv1.AWSStsConfig{Region: "eu-west-1",
			FallbackRoleArn: "arn:aws:iam::123456789012:role/mcp"}), nil},
		{"awsSts, what ToolHive's operator refuses", awsSts(thv1.AWSStsConfig{SessionDuration: ptr.To[int32](60),
			RoleMappings: []thv1.AWSRoleMapping{{Claim: "admins", Matcher: "true"}, {}}}),
			[]string{"awsSts.region: required", "roleMappings[0].roleArn: required", "roleMappings[0]: exactly one of claim and matcher",
				"roleMappings[1].roleArn: required", "roleMappings[1]: exactly one of claim and matcher", "sessionDuration: 60"}},
		{"awsSts, no role at all", awsSts(thv1.AWSStsConfig{Region: "us-east-1"}),
			[]string{"at least one of fallbackRoleArn and roleMappings"}},
		{"unknown type", thv1.MCPExternalAuthConfigSpec{Type: "oauth"}, []string{`spec.type: "oauth"`}},
		{"block missing", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeBearerToken}, []string{"spec.bearerToken: required"}},
		{"other block set", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated, OBO: &thv1.OBOConfig{}},
			[]string{"spec.obo: must not be set when type is unauthenticated"}},
		{"token URL", tokenExchange(thv1.TokenExchangeConfig{TokenURL: "idp.example.com/token", Audience: "a"}),
			[]string{"spec.tokenExchange.tokenUrl"}},
		{"no audience, bad scope, bad token type, bad header", tokenExchange(thv1.TokenExchangeConfig{TokenURL: "https://idp/t",
			Scopes: []string{"read write"}, SubjectTokenType: "saml", ExternalTokenHeaderName: "X Token", ClientSecretRef: secretRef("", "k")}),
			[]string{"audience: required", "clientSecretRef: name and key", "scopes[0]", "subjectTokenType", "externalTokenHeaderName"}},
		{"header name", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeHeaderInjection,
			HeaderInjection: &thv1.HeaderInjectionConfig{HeaderName: "X:Key"}},
			[]string{"spec.headerInjection.headerName", "spec.headerInjection.valueSecretRef: required"}},
		{"bearer token secret", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeBearerToken,
			BearerToken: &thv1.BearerTokenConfig{TokenSecretRef: secretRef("s", "")}}, []string{"tokenSecretRef: name and key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateExternalAuthConfig(extAuthConfig("a", tc.spec))
			if len(errs) != len(tc.want) {
				t.Fatalf("errors = %q, want %d", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

// The RunConfig fields and proxy variables are what ToolHive's operator
// writes for the same config (controllerutil/tokenexchange.go): secrets
// only as secretKeyRef variables.
func TestExternalAuth(t *testing.T) {
	secretVar := func(name, secret, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
	}
	for _, tc := range []struct {
		name string
		kind string
		cfg  *thv1.MCPExternalAuthConfig
		want ExternalAuthWiring
	}{
		{"none", thv1.KindMCPServer, nil, ExternalAuthWiring{}},
		{"unauthenticated", thv1.KindMCPRemoteProxy, extAuthConfig("u", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}), ExternalAuthWiring{}},
		{"headerInjection", thv1.KindMCPRemoteProxy, extAuthConfig("h", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeHeaderInjection,
			HeaderInjection: &thv1.HeaderInjectionConfig{HeaderName: "X-Key", ValueSecretRef: secretRef("s", "k")}}), ExternalAuthWiring{}},
		{"tokenExchange, replace", thv1.KindMCPServer, extAuthConfig("te", tokenExchange(thv1.TokenExchangeConfig{
			TokenURL: "https://idp/token", ClientID: "c", ClientSecretRef: secretRef("idp", "secret"), Audience: "backend",
			Scopes: []string{"read"}, SubjectTokenType: "id_token"})),
			ExternalAuthWiring{
				TokenExchange: &schema.TokenExchangeConfig{TokenURL: "https://idp/token", ClientID: "c", Audience: "backend",
					Scopes: []string{"read"}, SubjectTokenType: "urn:ietf:params:oauth:token-type:id_token", HeaderStrategy: "replace"},
				Env: []corev1.EnvVar{secretVar("TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET", "idp", "secret")},
			}},
		{"tokenExchange, custom header, no secret", thv1.KindMCPRemoteProxy, extAuthConfig("te", tokenExchange(thv1.TokenExchangeConfig{
			TokenURL: "https://idp/token", Audience: "backend", ExternalTokenHeaderName: "X-Upstream-Token"})),
			ExternalAuthWiring{TokenExchange: &schema.TokenExchangeConfig{TokenURL: "https://idp/token", Audience: "backend",
				HeaderStrategy: "custom", ExternalTokenHeaderName: "X-Upstream-Token"}}},
		// Every field as written, subjectProviderName (vMCP's) left out.
		{"awsSts", thv1.KindMCPRemoteProxy, extAuthConfig("aws", awsSts(goodAWS)), ExternalAuthWiring{AWSSts: &schema.AWSStsConfig{
			Region: "us-east-1", Service: "execute-api", FallbackRoleArn: "arn:aws:iam::123456789012:role/mcp-default",
			RoleMappings: []schema.AWSRoleMapping{
				{Claim: "admins", RoleArn: "arn:aws:iam::123456789012:role/mcp-admin", Priority: ptr.To[int32](1)},
				{Matcher: `claims["sub"] == "robot"`, RoleArn: "arn:aws:iam::123456789012:role/mcp-robot"},
			},
			RoleClaim: "roles", SessionDuration: 900, SessionNameClaim: "email"}}},
		// The schema's defaults, also when the object did not pass
		// through the API server.
		{"awsSts, defaults", thv1.KindMCPRemoteProxy, extAuthConfig("aws", awsSts(thv1.AWSStsConfig{Region: "eu-west-1",
			FallbackRoleArn: "arn:aws:iam::123456789012:role/mcp"})), ExternalAuthWiring{AWSSts: &schema.AWSStsConfig{
			Region: "eu-west-1", Service: "aws-mcp", FallbackRoleArn: "arn:aws:iam::123456789012:role/mcp",
			RoleClaim: "groups", SessionDuration: 3600, SessionNameClaim: "sub"}}},
		{"bearerToken", thv1.KindMCPRemoteProxy, extAuthConfig("b", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeBearerToken,
			BearerToken: &thv1.BearerTokenConfig{TokenSecretRef: secretRef("api-bearer-token", "token")}}),
			ExternalAuthWiring{RemoteAuth: &schema.RemoteAuthConfig{BearerToken: "api-bearer-token,target=bearer_token"},
				Env: []corev1.EnvVar{secretVar("TOOLHIVE_SECRET_api-bearer-token", "api-bearer-token", "token")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExternalAuth(tc.cfg, tc.kind)
			if err != nil || !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
	// headerInjection, upstreamInject and xaa configure nothing on a
	// proxy, as in ToolHive, and are reported as not acted on.
	for _, spec := range []thv1.MCPExternalAuthConfigSpec{
		{Type: thv1.ExternalAuthTypeHeaderInjection},
		{Type: thv1.ExternalAuthTypeUpstreamInject, UpstreamInject: &thv1.UpstreamInjectSpec{ProviderName: "github"}},
		{Type: thv1.ExternalAuthTypeXAA, XAA: &thv1.XAASpec{}},
	} {
		for _, kind := range []string{thv1.KindMCPServer, thv1.KindMCPRemoteProxy} {
			if got, err := ExternalAuth(extAuthConfig("h", spec), kind); err != nil || !equality.Semantic.DeepEqual(got, ExternalAuthWiring{}) {
				t.Errorf("%s on %s: %+v, %v", spec.Type, kind, got, err)
			}
		}
		want := "spec.externalAuthConfigRef (MCPExternalAuthConfig h of type " + spec.Type + ", which ToolHive applies to VirtualMCPServer backends only)"
		if got := ExternalAuthNoEffect(extAuthConfig("h", spec)); len(got) != 1 || got[0] != want {
			t.Errorf("%s is reported as not acted on: %q", spec.Type, got)
		}
	}
	if got := ExternalAuthNoEffect(extAuthConfig("u", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated})); got != nil {
		t.Errorf("unauthenticated: %q", got)
	}
}

// A workload is never run without the authentication it asked for: a
// type hivekeeper does not apply, and a bearer token for an MCPServer
// (which has no remote server), are an invalid spec naming the type.
func TestExternalAuthRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, kind, typ string
		spec            thv1.MCPExternalAuthConfigSpec
	}{
		{"awsSts without its block", thv1.KindMCPRemoteProxy, "awsSts", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeAWSSts}},
		{"awsSts on an MCPServer", thv1.KindMCPServer, "awsSts", awsSts(goodAWS)},
		{"obo", thv1.KindMCPRemoteProxy, "obo", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeOBO, OBO: &thv1.OBOConfig{}}},
		{"bearerToken on an MCPServer", thv1.KindMCPServer, "bearerToken", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeBearerToken,
			BearerToken: &thv1.BearerTokenConfig{TokenSecretRef: secretRef("s", "k")}}},
	} {
		_, err := ExternalAuth(extAuthConfig("cfg", tc.spec), tc.kind)
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionReady || !strings.Contains(invalid.Message, "spec.externalAuthConfigRef") ||
			!strings.Contains(invalid.Message, "type "+tc.typ) || !strings.Contains(invalid.Message, "MCPExternalAuthConfig cfg") {
			t.Errorf("%s: err = %v, want an InvalidSpecError naming the reference, the config and its type", tc.name, err)
		}
	}
}
