package toolhivetest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// NewVirtualMCPServer returns a minimal valid anonymous VirtualMCPServer of group
// with the server's defaults applied.
func NewVirtualMCPServer(ns, group, name string, mut ...func(*thv1.VirtualMCPServer)) *thv1.VirtualMCPServer {
	v := &thv1.VirtualMCPServer{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindVirtualMCPServer},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: k8stypes.UID("uid-" + name), Generation: 1, ResourceVersion: "1",
		},
		Spec: thv1.VirtualMCPServerSpec{
			IncomingAuth:    thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous},
			GroupRef:        thv1.GroupRef{Name: group},
			ServiceType:     thv1.ServiceTypeClusterIP,
			SessionAffinity: thv1.SessionAffinityClientIP,
		},
	}
	for _, m := range mut {
		m(v)
	}
	return v
}

// WithInlineBackends makes the server list its backends in config.yaml
// (outgoingAuth.source inline), where its default has vmcp discover them.
func WithInlineBackends(v *thv1.VirtualMCPServer) {
	if v.Spec.OutgoingAuth == nil {
		v.Spec.OutgoingAuth = &thv1.OutgoingAuth{}
	}
	v.Spec.OutgoingAuth.Source = thv1.OutgoingAuthSourceInline
}

// WithIncomingOIDC makes the server authenticate with the MCPOIDCConfig cfg.
func WithIncomingOIDC(cfg string) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) {
		v.Spec.IncomingAuth = thv1.IncomingAuth{Type: thv1.IncomingAuthOIDC,
			OIDCConfigRef: &thv1.OIDCConfigReference{Name: cfg, Audience: "vmcp", Scopes: []string{"openid"}}}
	}
}

// WithVMCPPodTemplate sets the raw podTemplateSpec.
func WithVMCPPodTemplate(raw string) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) { v.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(raw)} }
}

// NewMember returns an MCPServer; group "" means no group.
func NewMember(ns, name, group string, mut ...func(*thv1.MCPServer)) *thv1.MCPServer {
	s := &thv1.MCPServer{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPServer},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: k8stypes.UID("srv-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: thv1.MCPServerSpec{Image: "ghcr.io/example/" + name + ":1", Transport: thv1.TransportStdio,
			ProxyMode: thv1.TransportStreamableHTTP, ProxyPort: 8080},
	}
	if group != "" {
		s.Spec.GroupRef = &thv1.GroupRef{Name: group}
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

// VMCPUserVolumesTemplate covers the source types of the drift tests: a
// Secret, a ConfigMap with a key mapping, an EmptyDir with medium and size
// limit, and a projected volume.
const VMCPUserVolumesTemplate = `{"spec":{
  "volumes":[
    {"name":"creds","secret":{"secretName":"creds-v1"}},
    {"name":"settings","configMap":{"name":"settings","items":[{"key":"a.yaml","path":"a.yaml"}]}},
    {"name":"scratch","emptyDir":{"sizeLimit":"1Gi"}},
    {"name":"bundle","projected":{"sources":[{"configMap":{"name":"ca"}},{"serviceAccountToken":{"audience":"vault","path":"token"}}]}}
  ],
  "containers":[{"name":"vmcp","volumeMounts":[
    {"name":"creds","mountPath":"/creds","readOnly":true},
    {"name":"settings","mountPath":"/settings"},
    {"name":"scratch","mountPath":"/scratch"},
    {"name":"bundle","mountPath":"/bundle"}
  ]},{"name":"sidecar","image":"busybox:1","volumeMounts":[{"name":"creds","mountPath":"/elsewhere"}]}]
}}`

// VMCPFullTemplate sets what the pod template can beyond volumes: scheduling,
// metadata, an init container, an env entry and resources of the vmcp
// container, and image pull secrets merged with spec.imagePullSecrets.
const VMCPFullTemplate = `{"metadata":{"labels":{"team":"a"},"annotations":{"note":"x"}},"spec":{
  "nodeSelector":{"disk":"ssd"},
  "tolerations":[{"key":"dedicated","operator":"Equal","value":"mcp","effect":"NoSchedule"}],
  "priorityClassName":"high",
  "imagePullSecrets":[{"name":"tpl-pull"}],
  "initContainers":[{"name":"init","image":"busybox:1","command":["true"]}],
  "containers":[{"name":"vmcp","env":[{"name":"EXTRA","value":"1"}],
    "resources":{"limits":{"memory":"256Mi"}}}]
}}`

// NewRemoteMember returns an MCPRemoteProxy; group "" means no group.
func NewRemoteMember(ns, name, group string, mut ...func(*thv1.MCPRemoteProxy)) *thv1.MCPRemoteProxy {
	p := &thv1.MCPRemoteProxy{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPRemoteProxy},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: k8stypes.UID("rp-" + name), Generation: 1, ResourceVersion: "1"},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://mcp.example.com/mcp", Transport: thv1.TransportStreamableHTTP, ProxyPort: 8080},
	}
	if group != "" {
		p.Spec.GroupRef = &thv1.GroupRef{Name: group}
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

// WithVMCPRedis sets Redis session storage with a password from a Secret.
func WithVMCPRedis(v *thv1.VirtualMCPServer) {
	v.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379", DB: 2,
		KeyPrefix: "vmcp:", PasswordRef: &thv1.SecretKeyRef{Name: "redis", Key: "password"}}
}

// NewEntry returns an MCPServerEntry of group whose checks passed (phase
// Valid, as its controller writes it).
func NewEntry(ns, name, group string, mut ...func(*thv1.MCPServerEntry)) *thv1.MCPServerEntry {
	e := &thv1.MCPServerEntry{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPServerEntry},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: k8stypes.UID("entry-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: thv1.MCPServerEntrySpec{RemoteURL: "https://mcp.remote.example/" + name, Transport: thv1.TransportStreamableHTTP,
			GroupRef: &thv1.GroupRef{Name: group}},
		Status: thv1.MCPServerEntryStatus{Phase: thv1.MCPServerEntryPhaseValid, ObservedGeneration: 1},
	}
	for _, m := range mut {
		m(e)
	}
	return e
}

// WithEntryExtras gives an entry a CA bundle and a literal and a Secret
// header.
func WithEntryExtras(e *thv1.MCPServerEntry) {
	e.Spec.CABundleRef = &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "remote-ca", Key: "bundle.pem"}}
	e.Spec.HeaderForward = &thv1.HeaderForwardConfig{
		AddPlaintextHeaders:  map[string]string{"X-Tenant": "a"},
		AddHeadersFromSecret: []thv1.HeaderFromSecret{{HeaderName: "X-Api-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "remote-key", Key: "key"}}},
	}
}

// WithMemberAuthRef makes a member name its own MCPExternalAuthConfig.
func WithMemberAuthRef(name string) func(*thv1.MCPServer) {
	return func(s *thv1.MCPServer) { s.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: name} }
}

// validMeta is the metadata and status of a valid config named name, as
// its controller would have written them.
func validMeta(ns, kind, name string) (metav1.TypeMeta, metav1.ObjectMeta, thv1.ConfigStatus) {
	return metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: kind},
		metav1.ObjectMeta{Name: name, Namespace: ns, UID: k8stypes.UID(kind + "-" + name), Generation: 1, ResourceVersion: "1"},
		thv1.ConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
		}}}
}

// NewToolConfig is a valid MCPToolConfig filtering to filter, with two
// overrides.
func NewToolConfig(ns, name string, filter ...string) *thv1.MCPToolConfig {
	tm, om, st := validMeta(ns, thv1.KindMCPToolConfig, name)
	return &thv1.MCPToolConfig{TypeMeta: tm, ObjectMeta: om, Status: st, Spec: thv1.MCPToolConfigSpec{
		ToolsFilter:   filter,
		ToolsOverride: map[string]thv1.ToolOverride{"fetch": {Name: "get_page"}, "search": {Description: "from the config"}},
	}}
}

// NewExternalAuthConfig is a valid MCPExternalAuthConfig whose spec mut
// sets.
func NewExternalAuthConfig(ns, name string, mut func(*thv1.MCPExternalAuthConfigSpec)) *thv1.MCPExternalAuthConfig {
	tm, om, st := validMeta(ns, thv1.KindMCPExternalAuthConfig, name)
	c := &thv1.MCPExternalAuthConfig{TypeMeta: tm, ObjectMeta: om, Status: st}
	mut(&c.Spec)
	return c
}

// HeaderInjection makes an MCPExternalAuthConfig inject a header from a
// Secret.
func HeaderInjection(s *thv1.MCPExternalAuthConfigSpec) {
	s.Type = thv1.ExternalAuthTypeHeaderInjection
	s.HeaderInjection = &thv1.HeaderInjectionConfig{HeaderName: "X-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "pat", Key: "token"}}
}

// TokenExchange makes an MCPExternalAuthConfig exchange the caller's
// token, with a client secret.
func TokenExchange(s *thv1.MCPExternalAuthConfigSpec) {
	s.Type = thv1.ExternalAuthTypeTokenExchange
	s.TokenExchange = &thv1.TokenExchangeConfig{TokenURL: "https://idp.example.com/token", ClientID: "vmcp", Audience: "api",
		ClientSecretRef: &thv1.SecretKeyRef{Name: "idp", Key: "secret"}, SubjectTokenType: "id_token"}
}

// NewCedarAuthzConfig is a valid MCPAuthzConfig of type typ with a Cedar
// policy.
func NewCedarAuthzConfig(ns, name, typ string) *thv1.MCPAuthzConfig {
	tm, om, st := validMeta(ns, thv1.KindMCPAuthzConfig, name)
	return &thv1.MCPAuthzConfig{TypeMeta: tm, ObjectMeta: om, Status: st, Spec: thv1.MCPAuthzConfigSpec{
		Type: typ, Config: runtime.RawExtension{Raw: []byte(`{"policies":["permit(principal, action, resource);"],"entities_json":"[]","role_claim_name":"roles"}`)},
	}}
}

// WithVMCPRefs makes the server reference one config of every kind its
// config.yaml is built from.
func WithVMCPRefs(v *thv1.VirtualMCPServer) {
	v.Spec.IncomingAuth.AuthzConfigRef = &thv1.AuthzConfigReference{Name: "cedar"}
	v.Spec.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "otel"}
	v.Spec.PassthroughHeaders = []string{"X-Api-Key"}
	v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Source: thv1.OutgoingAuthSourceDiscovered,
		Default: &thv1.BackendAuth{Type: thv1.BackendAuthTypeExternalAuthConfigRef, ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "exchange"}},
		Backends: map[string]thv1.BackendAuth{
			"alpha": {Type: thv1.BackendAuthTypeExternalAuthConfigRef, ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "header"}},
			"zeta":  {Type: thv1.BackendAuthTypeDiscovered},
		}}
	v.Spec.Config = Decode[thv1.VirtualMCPConfig](`{"aggregation":{"tools":[` +
		`{"workload":"alpha","toolConfigRef":{"name":"tools"}},` +
		`{"workload":"zeta","toolConfigRef":{"name":"tools"},"filter":["own"],"overrides":{"search":{"name":"mine"}}}]},` +
		`"operational":{"timeouts":{"default":"90s"}},"audit":{"enabled":true}}`)
}

// VMCPRefObjects are the configs WithVMCPRefs names.
func VMCPRefObjects(ns string) []runtime.Object {
	return []runtime.Object{NewToolConfig(ns, "tools", "fetch"), NewCedarAuthzConfig(ns, "cedar", thv1.AuthzTypeCedar),
		NewTelemetryConfig(ns, "otel", "otel", "otel-ca"),
		NewExternalAuthConfig(ns, "exchange", TokenExchange), NewExternalAuthConfig(ns, "header", HeaderInjection)}
}

// VMCPResource is the resource URL (and so the audience) of a vMCP whose
// embedded authorization server issues its tokens.
const VMCPResource = "https://vmcp.example.com/mcp"

// VMCPAuthServerJSON has two upstreams, the second without a client secret,
// and every Secret the pod must get.
const VMCPAuthServerJSON = `{"issuer":"https://idp.example.com","signingKeySecretRefs":[{"name":"keys","key":"k0"},{"name":"keys","key":"k1"}],` +
	`"hmacSecretRefs":[{"name":"hmac","key":"h"}],"tokenLifespans":{"accessTokenLifespan":"30m"},"storage":{"type":"memory"},` +
	`"upstreamProviders":[{"name":"corp-idp","type":"oidc","oidcConfig":{"issuerUrl":"https://corp.example.com","clientId":"vmcp",` +
	`"clientSecretRef":{"name":"corp","key":"secret"},"scopes":["openid","email"]}},` +
	`{"name":"github","type":"oidc","oidcConfig":{"issuerUrl":"https://token.actions.githubusercontent.com","clientId":"gh"}}]}`

// WithVMCPAuthServer makes the server authenticate with the MCPOIDCConfig
// "auth" (issuer https://idp.example.com) for VMCPResource, and run the
// embedded authorization server raw.
func WithVMCPAuthServer(raw string) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) {
		v.Spec.IncomingAuth = thv1.IncomingAuth{Type: thv1.IncomingAuthOIDC, OIDCConfigRef: &thv1.OIDCConfigReference{
			Name: "auth", Audience: VMCPResource, ResourceURL: VMCPResource, Scopes: []string{"openid", "offline_access"}}}
		v.Spec.AuthServerConfig = Decode[thv1.EmbeddedAuthServerConfig](raw)
	}
}

// WithCompositeToolRefs names composite tool definitions in spec.config,
// where ToolHive keeps them.
func WithCompositeToolRefs(raw string) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = Decode[thv1.VirtualMCPConfig](`{"compositeToolRefs":` + raw + `}`)
	}
}
