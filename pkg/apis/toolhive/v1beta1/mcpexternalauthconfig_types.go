package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Types of an MCPExternalAuthConfig (spec.type), ToolHive's values at the
// pinned release. hivekeeper applies the first four and awsSts to
// MCPServers and MCPRemoteProxies; a workload referencing a config of
// another type is not deployed (its Ready condition names the type).
const (
	ExternalAuthTypeTokenExchange      = "tokenExchange"
	ExternalAuthTypeHeaderInjection    = "headerInjection"
	ExternalAuthTypeBearerToken        = "bearerToken"
	ExternalAuthTypeUnauthenticated    = "unauthenticated"
	ExternalAuthTypeEmbeddedAuthServer = "embeddedAuthServer"
	ExternalAuthTypeAWSSts             = "awsSts"
	ExternalAuthTypeUpstreamInject     = "upstreamInject"
	ExternalAuthTypeOBO                = "obo"
	ExternalAuthTypeXAA                = "xaa"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=extauth;mcpextauth,categories=toolhive
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=='Valid')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPExternalAuthConfig is how the proxies of the MCPServers and
// MCPRemoteProxies that reference it (spec.externalAuthConfigRef)
// authenticate to what they proxy: an exchanged token, a bearer token
// from a Secret, or nothing.
type MCPExternalAuthConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the kind of authentication and its configuration.
	// +required
	Spec MCPExternalAuthConfigSpec `json:"spec"`
	// Status is written by hivekeeper's MCPExternalAuthConfig controller
	// only.
	// +optional
	Status ConfigStatus `json:"status,omitempty"`
}

// MCPExternalAuthConfigSpec names a type and carries the block of that
// type, and no other. Fields of a later ToolHive release are kept.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="self.type == 'tokenExchange' ? has(self.tokenExchange) : !has(self.tokenExchange)",message="tokenExchange configuration must be set if and only if type is 'tokenExchange'"
// +kubebuilder:validation:XValidation:rule="self.type == 'headerInjection' ? has(self.headerInjection) : !has(self.headerInjection)",message="headerInjection configuration must be set if and only if type is 'headerInjection'"
// +kubebuilder:validation:XValidation:rule="self.type == 'bearerToken' ? has(self.bearerToken) : !has(self.bearerToken)",message="bearerToken configuration must be set if and only if type is 'bearerToken'"
// +kubebuilder:validation:XValidation:rule="self.type == 'embeddedAuthServer' ? has(self.embeddedAuthServer) : !has(self.embeddedAuthServer)",message="embeddedAuthServer configuration must be set if and only if type is 'embeddedAuthServer'"
// +kubebuilder:validation:XValidation:rule="self.type == 'awsSts' ? has(self.awsSts) : !has(self.awsSts)",message="awsSts configuration must be set if and only if type is 'awsSts'"
// +kubebuilder:validation:XValidation:rule="self.type == 'upstreamInject' ? has(self.upstreamInject) : !has(self.upstreamInject)",message="upstreamInject configuration must be set if and only if type is 'upstreamInject'"
// +kubebuilder:validation:XValidation:rule="self.type == 'obo' ? has(self.obo) : !has(self.obo)",message="obo configuration must be set if and only if type is 'obo'"
// +kubebuilder:validation:XValidation:rule="self.type == 'xaa' ? has(self.xaa) : !has(self.xaa)",message="xaa configuration must be set if and only if type is 'xaa'"
// +kubebuilder:validation:XValidation:rule="self.type == 'unauthenticated' ? (!has(self.tokenExchange) && !has(self.headerInjection) && !has(self.bearerToken) && !has(self.embeddedAuthServer) && !has(self.awsSts) && !has(self.upstreamInject) && !has(self.obo) && !has(self.xaa)) : true",message="type unauthenticated takes no configuration block"
type MCPExternalAuthConfigSpec struct {
	// Type is the kind of authentication. hivekeeper applies
	// tokenExchange, headerInjection, bearerToken, unauthenticated and
	// awsSts; it stores the others, and a workload referencing one is not
	// deployed.
	// +kubebuilder:validation:Enum=tokenExchange;headerInjection;bearerToken;unauthenticated;embeddedAuthServer;awsSts;upstreamInject;obo;xaa
	// +required
	Type string `json:"type"`
	// TokenExchange exchanges the caller's token for one for the backend
	// (RFC 8693), type tokenExchange.
	// +optional
	TokenExchange *TokenExchangeConfig `json:"tokenExchange,omitempty"`
	// HeaderInjection is a header with a value from a Secret, type
	// headerInjection.
	// +optional
	HeaderInjection *HeaderInjectionConfig `json:"headerInjection,omitempty"`
	// BearerToken is a bearer token from a Secret for the remote server,
	// type bearerToken.
	// +optional
	BearerToken *BearerTokenConfig `json:"bearerToken,omitempty"`

	// EmbeddedAuthServer runs an OAuth authorization server in the proxy of
	// the workloads that name this config in spec.authServerRef, type
	// embeddedAuthServer.
	// +optional
	EmbeddedAuthServer *EmbeddedAuthServerConfig `json:"embeddedAuthServer,omitempty"`
	// AWSSts signs requests to an AWS service with STS credentials
	// obtained for the caller's token, type awsSts (see awssts_types.go).
	// +optional
	AWSSts *AWSStsConfig `json:"awsSts,omitempty"`
	// UpstreamInject sends the backend the token an upstream provider of
	// the embedded authorization server issued, type upstreamInject.
	// +optional
	UpstreamInject *UpstreamInjectSpec `json:"upstreamInject,omitempty"`
	// OBO exchanges the caller's token for one for the backend with Entra
	// ID's on-behalf-of flow, type obo.
	// +optional
	OBO *OBOConfig `json:"obo,omitempty"`
	// XAA obtains the backend's token by cross-app access (an ID-JAG from
	// the identity provider, exchanged at the backend's token endpoint),
	// type xaa.
	// +optional
	XAA *XAASpec `json:"xaa,omitempty"`
}

// UpstreamInjectSpec names the upstream provider whose token is sent.
// +kubebuilder:pruning:PreserveUnknownFields
type UpstreamInjectSpec struct {
	// ProviderName is the upstream provider's name in the embedded
	// authorization server.
	// +kubebuilder:validation:MinLength=1
	// +required
	ProviderName string `json:"providerName"`
}

// OBOConfig is Microsoft Entra ID's on-behalf-of token exchange.
// +kubebuilder:pruning:PreserveUnknownFields
type OBOConfig struct {
	// TenantID is the Entra tenant, a GUID or a verified domain.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,})$`
	// +optional
	TenantID string `json:"tenantId,omitempty"`
	// Authority is the token authority's base URL, for clouds other than
	// the public one.
	// +kubebuilder:validation:Pattern=`^https://[^\s?#@]+[^/\s?#@]$`
	// +optional
	Authority string `json:"authority,omitempty"`
	// ClientID of the application that exchanges.
	// +optional
	ClientID string `json:"clientId,omitempty"`
	// ClientSecretRef is that application's secret.
	// +optional
	ClientSecretRef *SecretKeyRef `json:"clientSecretRef,omitempty"`
	// Audience of the exchanged token.
	// +optional
	Audience string `json:"audience,omitempty"`
	// Scopes requested for the exchanged token.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +optional
	Scopes []string `json:"scopes,omitempty"`
	// SubjectTokenProviderName selects an embedded authorization server's
	// upstream provider as the subject token's source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	// +optional
	SubjectTokenProviderName string `json:"subjectTokenProviderName,omitempty"`
	// CacheSkew is how long before expiry a cached token is renewed, a
	// Go duration.
	// +optional
	CacheSkew *string `json:"cacheSkew,omitempty"`
}

// XAASpec is cross-app access: the caller's ID token is exchanged at the
// identity provider for an ID-JAG, which the backend's token endpoint
// exchanges for an access token.
// +kubebuilder:pruning:PreserveUnknownFields
type XAASpec struct {
	// IDPTokenURL is the identity provider's token endpoint.
	// +kubebuilder:validation:Pattern=`^https://.*$`
	// +required
	IDPTokenURL string `json:"idpTokenUrl"`
	// IDPClientID is the client at the identity provider.
	// +optional
	IDPClientID string `json:"idpClientId,omitempty"`
	// IDPClientSecretRef is that client's secret.
	// +optional
	IDPClientSecretRef *SecretKeyRef `json:"idpClientSecretRef,omitempty"`
	// TargetTokenURL is the backend authorization server's token endpoint.
	// +required
	TargetTokenURL string `json:"targetTokenUrl"`
	// InsecureTargetTokenURL allows an http:// target token URL. For
	// development only.
	// +optional
	InsecureTargetTokenURL bool `json:"insecureTargetTokenUrl,omitempty"`
	// TargetClientID is the client at the backend authorization server.
	// +optional
	TargetClientID string `json:"targetClientId,omitempty"`
	// TargetClientSecretRef is that client's secret.
	// +optional
	TargetClientSecretRef *SecretKeyRef `json:"targetClientSecretRef,omitempty"`
	// TargetAudience is the backend authorization server, the ID-JAG's
	// audience.
	// +required
	TargetAudience string `json:"targetAudience"`
	// TargetResource is the backend resource the token is for.
	// +optional
	TargetResource string `json:"targetResource,omitempty"`
	// Scopes requested for the backend token.
	// +listType=atomic
	// +optional
	Scopes []string `json:"scopes,omitempty"`
	// SubjectProviderName selects an embedded authorization server's
	// upstream provider as the ID token's source.
	// +optional
	SubjectProviderName string `json:"subjectProviderName,omitempty"`
	// SubjectTokenType is the type of the subject token, an ID token.
	// +kubebuilder:validation:Enum="urn:ietf:params:oauth:token-type:id_token"
	// +optional
	SubjectTokenType string `json:"subjectTokenType,omitempty"`
}

// TokenExchangeConfig is an OAuth 2.0 token exchange (RFC 8693): the
// proxy exchanges the caller's token at tokenUrl and sends the result to
// the backend.
type TokenExchangeConfig struct {
	// TokenURL is the token endpoint.
	// +required
	TokenURL string `json:"tokenUrl"`
	// ClientID is the OAuth client, if the endpoint wants one.
	// +optional
	ClientID string `json:"clientId,omitempty"`
	// ClientSecretRef is the client secret, from a Secret; it reaches the
	// proxy as an environment variable, never through the RunConfig.
	// +optional
	ClientSecretRef *SecretKeyRef `json:"clientSecretRef,omitempty"`
	// Audience is the audience of the exchanged token.
	// +required
	Audience string `json:"audience"`
	// Scopes are requested for the exchanged token.
	// +listType=atomic
	// +optional
	Scopes []string `json:"scopes,omitempty"`
	// SubjectTokenType is the type of the caller's token: access_token
	// (the default), id_token, jwt, or the full URN of one of them.
	// +kubebuilder:validation:Pattern=`^(access_token|id_token|jwt|urn:ietf:params:oauth:token-type:(access_token|id_token|jwt))?$`
	// +optional
	SubjectTokenType string `json:"subjectTokenType,omitempty"`
	// ExternalTokenHeaderName, when set, is the header the exchanged token
	// is sent in; otherwise it replaces the Authorization header.
	// +optional
	ExternalTokenHeaderName string `json:"externalTokenHeaderName,omitempty"`
	// SubjectProviderName selects an upstream provider of an embedded
	// authorization server as the subject token's source; it has no
	// effect on an MCPServer or MCPRemoteProxy.
	// +optional
	SubjectProviderName string `json:"subjectProviderName,omitempty"`
}

// HeaderInjectionConfig is a header whose value comes from a Secret.
type HeaderInjectionConfig struct {
	// HeaderName is the header.
	// +kubebuilder:validation:MinLength=1
	// +required
	HeaderName string `json:"headerName"`
	// ValueSecretRef is the Secret key holding its value.
	// +required
	ValueSecretRef *SecretKeyRef `json:"valueSecretRef"`
}

// BearerTokenConfig is a bearer token from a Secret.
type BearerTokenConfig struct {
	// TokenSecretRef is the Secret key holding the token.
	// +required
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef"`
}

// ExternalAuthConfigReference names an MCPExternalAuthConfig in the
// workload's namespace.
type ExternalAuthConfigReference struct {
	// Name of the MCPExternalAuthConfig.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPExternalAuthConfigList is a list of MCPExternalAuthConfigs.
type MCPExternalAuthConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPExternalAuthConfigs.
	Items []MCPExternalAuthConfig `json:"items"`
}
