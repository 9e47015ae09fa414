package mcpremoteproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

func bearerConfig(hash, secret string) *thv1.MCPExternalAuthConfig {
	return &thv1.MCPExternalAuthConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "api-bearer-auth", ResourceVersion: "1"},
		Spec: thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeBearerToken,
			BearerToken: &thv1.BearerTokenConfig{TokenSecretRef: &thv1.SecretKeyRef{Name: secret, Key: "token"}}},
		Status: thv1.ConfigStatus{ConfigHash: hash, Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid}}},
	}
}

// A bearer token reaches the runner as ToolHive's operator wires it: the
// RunConfig names the Secret as a secret parameter, the proxy container
// reads the token from a secretKeyRef variable under the environment
// secrets provider. A change of the config rolls the proxy exactly once,
// and the sync after it writes nothing.
func TestExternalAuthBearerToken(t *testing.T) {
	ref := func(p *thv1.MCPRemoteProxy) {
		p.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "api-bearer-auth"}
	}
	f := newFixture(t, newProxy("remote", ref), bearerConfig("h1", "api-bearer-token"))
	f.converge("remote")
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("remote"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		RemoteAuth map[string]any `json:"remote_auth_config"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	// The keys ToolHive's remote.Config writes empty come with it.
	if len(rc.RemoteAuth) != 4 || rc.RemoteAuth["bearer_token"] != "api-bearer-token,target=bearer_token" || rc.RemoteAuth["use_pkce"] != false {
		t.Errorf("remote_auth_config: %v", rc.RemoteAuth)
	}
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := dep.Spec.Template.Spec.Containers[0].Env
	var names []string
	for _, e := range env {
		names = append(names, e.Name)
	}
	if got, want := strings.Join(names, ","), "TOOLHIVE_SECRET_api-bearer-token,XDG_CONFIG_HOME,HOME,TOOLHIVE_RUNTIME,UNSTRUCTURED_LOGS,TOOLHIVE_SECRETS_PROVIDER"; got != want {
		t.Errorf("env = %s, want %s", got, want)
	}
	if r := env[0].ValueFrom; r == nil || r.SecretKeyRef == nil || r.SecretKeyRef.Name != "api-bearer-token" || r.SecretKeyRef.Key != "token" || env[0].Value != "" {
		t.Errorf("the token's variable is not a secretKeyRef: %+v", env[0])
	}
	p := f.get("remote")
	if p.Status.ExternalAuthConfigHash != "h1" || !meta.IsStatusConditionTrue(p.Status.Conditions, thv1.ConditionExternalAuthConfigValidated) {
		t.Errorf("status %+v", p.Status)
	}
	if meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionUnsupportedFields) != nil {
		t.Errorf("externalAuthConfigRef is reported as unsupported: %+v", p.Status.Conditions)
	}

	// The config names another Secret: one ConfigMap patch and one
	// Deployment patch (the checksum rolls the pods), then nothing.
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(testNS).Update(context.Background(), bearerConfig("h2", "rotated"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments", "patch mcpremoteproxies/status")
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, err = f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts)
}

// What hivekeeper does not apply keeps the proxy from being deployed, with
// a Ready condition naming the type (obo, which only ToolHive's
// enterprise build applies); headerInjection, upstreamInject and xaa,
// which ToolHive does not apply to a proxy either, deploy it as ToolHive
// does and are reported as not acted on.
func TestExternalAuthNotApplied(t *testing.T) {
	ref := func(p *thv1.MCPRemoteProxy) {
		p.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "ext"}
	}
	cfg := func(spec thv1.MCPExternalAuthConfigSpec) *thv1.MCPExternalAuthConfig {
		c := bearerConfig("h", "s")
		c.Name, c.Spec = "ext", spec
		return c
	}
	for _, spec := range []thv1.MCPExternalAuthConfigSpec{
		{Type: thv1.ExternalAuthTypeXAA, XAA: &thv1.XAASpec{}},
		{Type: thv1.ExternalAuthTypeUpstreamInject, UpstreamInject: &thv1.UpstreamInjectSpec{ProviderName: "github"}},
	} {
		f := newFixture(t, newProxy("remote", ref), cfg(spec))
		acts, err := f.sync("remote")
		if err != nil {
			t.Fatal(err)
		}
		wt.AssertActions(t, acts, "create serviceaccounts", "create rolebindings", "create configmaps", "create services", "create deployments",
			"patch mcpremoteproxies/status")
		if c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionUnsupportedFields); c == nil ||
			!strings.Contains(c.Message, "MCPExternalAuthConfig ext of type "+spec.Type) {
			t.Errorf("%s: UnsupportedFields: %+v", spec.Type, c)
		}
	}

	f := newFixture(t, newProxy("remote", ref), cfg(thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeHeaderInjection,
		HeaderInjection: &thv1.HeaderInjectionConfig{HeaderName: "X-API-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "s", Key: "k"}}}))
	f.converge("remote")
	p := f.get("remote")
	if c := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionUnsupportedFields); c == nil ||
		!strings.Contains(c.Message, "MCPExternalAuthConfig ext of type headerInjection") {
		t.Errorf("UnsupportedFields: %+v", c)
	}
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("headerInjection: the proxy runs, as with ToolHive: %v", err)
	}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("headerInjection adds a variable ToolHive does not: %+v", e)
		}
	}
}

func awsStsConfig(hash, role string) *thv1.MCPExternalAuthConfig {
	c := bearerConfig(hash, "unused")
	c.Name = "aws"
	c.Spec = thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeAWSSts, AWSSts: &thv1.AWSStsConfig{
		Region: "us-east-1", Service: "aws-mcp", FallbackRoleArn: role, RoleClaim: "groups",
		SessionDuration: ptr.To[int32](3600), SessionNameClaim: "sub",
		RoleMappings: []thv1.AWSRoleMapping{{Claim: "admins", RoleArn: "arn:aws:iam::123456789012:role/admin", Priority: ptr.To[int32](0)}},
	}}
	return c
}

// AWS STS reaches the runner as ToolHive's operator writes it: the
// RunConfig's aws_sts_config, and no variable or volume (there is no
// secret). A change of the config rolls the proxy exactly once, and the
// sync after it writes nothing.
func TestExternalAuthAWSSts(t *testing.T) {
	ref := func(p *thv1.MCPRemoteProxy) {
		p.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "aws"}
	}
	f := newFixture(t, newProxy("remote", ref), awsStsConfig("h1", "arn:aws:iam::123456789012:role/mcp"))
	f.converge("remote")
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("remote"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		AWS json.RawMessage `json:"aws_sts_config"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	want := `{"region":"us-east-1","service":"aws-mcp","fallback_role_arn":"arn:aws:iam::123456789012:role/mcp",` +
		`"role_mappings":[{"claim":"admins","role_arn":"arn:aws:iam::123456789012:role/admin","priority":0}],` +
		`"role_claim":"groups","session_duration":3600,"session_name_claim":"sub"}`
	var compact bytes.Buffer
	if err := json.Compact(&compact, rc.AWS); err != nil || compact.String() != want {
		t.Errorf("aws_sts_config = %s\nwant %s", compact.String(), want)
	}
	dep := f.deployment("remote")
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil {
			t.Errorf("awsSts adds a variable ToolHive's operator does not: %+v", e)
		}
	}
	if p := f.get("remote"); p.Status.ExternalAuthConfigHash != "h1" || !meta.IsStatusConditionTrue(p.Status.Conditions, thv1.ConditionExternalAuthConfigValidated) {
		t.Errorf("status %+v", p.Status)
	}

	if _, err := f.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(testNS).Update(context.Background(),
		awsStsConfig("h2", "arn:aws:iam::123456789012:role/other"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments", "patch mcpremoteproxies/status")
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, err = f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts)
}

// A missing MCPExternalAuthConfig is reported as ToolHive's operator
// reports it, besides the reference's own condition: ConfigurationValid
// False ExternalAuthConfigFetchError with one Warning event of that reason,
// AuthConfigured False AuthInvalid, Failed, nothing created. The config
// appearing deploys the proxy and clears AuthConfigured.
func TestMissingExternalAuthConfig(t *testing.T) {
	ref := func(p *thv1.MCPRemoteProxy) {
		p.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "api-bearer-auth"}
	}
	f := newFixture(t, newProxy("remote", ref))
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	got := f.get("remote").Status
	cv := meta.FindStatusCondition(got.Conditions, thv1.ConditionConfigurationValid)
	ac := meta.FindStatusCondition(got.Conditions, thv1.ConditionAuthConfigured)
	if cv == nil || cv.Status != metav1.ConditionFalse || cv.Reason != thv1.ReasonExternalAuthConfigFetchError {
		t.Errorf("ConfigurationValid = %+v, want False %s", cv, thv1.ReasonExternalAuthConfigFetchError)
	}
	if ac == nil || ac.Status != metav1.ConditionFalse || ac.Reason != thv1.ReasonAuthInvalid {
		t.Errorf("AuthConfigured = %+v, want False %s", ac, thv1.ReasonAuthInvalid)
	}
	if got.Phase != thv1.MCPRemoteProxyPhaseFailed {
		t.Errorf("phase %s, want Failed", got.Phase)
	}
	fetchErrors := 0
	for _, e := range f.Events() {
		if strings.HasPrefix(e, "Warning "+thv1.ReasonExternalAuthConfigFetchError) {
			fetchErrors++
		}
	}
	if fetchErrors != 1 {
		t.Errorf("%d Warning %s events, want 1", fetchErrors, thv1.ReasonExternalAuthConfigFetchError)
	}
	f.Refresh()
	if acts, _ := f.sync("remote"); len(acts) != 0 || len(f.Events()) != 0 {
		t.Fatalf("second sync: %s", wt.Describe(acts))
	}
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(testNS).Create(context.Background(), bearerConfig("h1", "api-bearer-token"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	f.converge("remote")
	got = f.get("remote").Status
	if meta.FindStatusCondition(got.Conditions, thv1.ConditionAuthConfigured) != nil || !meta.IsStatusConditionTrue(got.Conditions, thv1.ConditionConfigurationValid) {
		t.Errorf("once the config exists: %+v", got.Conditions)
	}
	if _, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{}); err != nil {
		t.Errorf("not deployed once the config exists: %v", err)
	}
}
