// Package index holds the reference indexes hivekeeper's controllers use
// instead of listing a namespace: which config (MCPOIDCConfig,
// MCPToolConfig, MCPAuthzConfig, MCPExternalAuthConfig, MCPTelemetryConfig,
// MCPWebhookConfig, VirtualMCPCompositeToolDefinition, EmbeddingServer)
// each workload references, which MCPGroup each workload (MCPServerEntries
// included) belongs to, and which ServiceAccount each workload's pods are
// told to run as (spec.serviceAccount, a podTemplateSpec's
// serviceAccountName).
//
// Index values are namespaced keys "<ns>/<name>" because client-go indexes
// are global across namespaces. One table row per workload kind describes
// how to read a reference, so adding a kind is one row.
package index

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Index names: each maps a workload to "<ns>/<name>" of what it references.
const (
	// ByOIDCConfig: the MCPOIDCConfig a workload authenticates with.
	ByOIDCConfig = "toolhive.stacklok.dev/oidc-config"
	// ByToolConfig: the MCPToolConfig that filters a workload's tools.
	ByToolConfig = "toolhive.stacklok.dev/tool-config"
	// ByAuthzConfig: the MCPAuthzConfig that authorizes a workload's requests.
	ByAuthzConfig = "toolhive.stacklok.dev/authz-config"
	// ByAuthzConfigMap: the ConfigMap holding a workload's authorization
	// file (spec.authzConfig of type configMap; a VirtualMCPServer's
	// spec.incomingAuth.authzConfig).
	ByAuthzConfigMap = "toolhive.stacklok.dev/authz-configmap"
	// ByAuthServerCAConfigMap: the ConfigMaps holding the CA bundles of a
	// VirtualMCPServer's embedded authorization server
	// (spec.authServerConfig's upstreams and trusted issuers); an
	// MCPServer's or MCPRemoteProxy's are named by its
	// MCPExternalAuthConfig.
	ByAuthServerCAConfigMap = "toolhive.stacklok.dev/authserver-ca-configmap"
	// ByExternalAuthConfig: the MCPExternalAuthConfig a workload's proxy
	// authenticates to its backend with.
	ByExternalAuthConfig = "toolhive.stacklok.dev/external-auth-config"
	// ByAuthServerRef: the MCPExternalAuthConfig whose embedded
	// authorization server a workload's proxy runs (spec.authServerRef).
	// A reference of another kind names no MCPExternalAuthConfig.
	ByAuthServerRef = "toolhive.stacklok.dev/auth-server-ref"
	// ByTelemetryConfig: the MCPTelemetryConfig a workload exports
	// telemetry with.
	ByTelemetryConfig = "toolhive.stacklok.dev/telemetry-config"
	// ByWebhookConfig: the MCPWebhookConfig whose webhooks a workload's
	// proxy calls.
	ByWebhookConfig = "toolhive.stacklok.dev/webhook-config"
	// ByCompositeToolDefinition: the VirtualMCPCompositeToolDefinitions a
	// VirtualMCPServer's spec.config.compositeToolRefs name (several).
	ByCompositeToolDefinition = "toolhive.stacklok.dev/composite-tool-definition"
	// ByGroup: the MCPGroup a workload belongs to.
	ByGroup = "toolhive.stacklok.dev/group"
	// ByEmbeddingServer: the EmbeddingServer whose URL a VirtualMCPServer's
	// optimizer uses (spec.embeddingServerRef).
	ByEmbeddingServer = "toolhive.stacklok.dev/embedding-server"
	// ByServiceAccount: the ServiceAccounts a workload's spec names for its
	// pods (spec.serviceAccount, spec.podTemplateSpec.spec.
	// serviceAccountName). Whether a workload may run as an account
	// depends on who owns the account, so the account's creation, change
	// of owner or deletion re-syncs the workloads naming it.
	ByServiceAccount = "toolhive.stacklok.dev/service-account"
)

// Workload is one row of the table: a workload kind and, per index, how to
// read the names it references (none for none; a VirtualMCPServer names
// one MCPToolConfig per aggregated workload and one MCPExternalAuthConfig
// per backend). An index a row does not list is a reference the kind
// cannot make.
type Workload struct {
	Kind string
	Refs map[string]func(obj any) []string
}

// Workloads is the table of workload kinds and the references they make.
var Workloads = []Workload{
	{
		Kind: thv1.KindMCPServer,
		Refs: map[string]func(obj any) []string{
			ByOIDCConfig:         ref(func(s *thv1.MCPServer) string { return nameOf(s.Spec.OIDCConfigRef) }),
			ByToolConfig:         ref(func(s *thv1.MCPServer) string { return nameOf(s.Spec.ToolConfigRef) }),
			ByAuthzConfig:        ref(func(s *thv1.MCPServer) string { return nameOf(s.Spec.AuthzConfigRef) }),
			ByAuthzConfigMap:     ref(func(s *thv1.MCPServer) string { return authzConfigMap(s.Spec.AuthzConfig) }),
			ByExternalAuthConfig: ref(func(s *thv1.MCPServer) string { return nameOf(s.Spec.ExternalAuthConfigRef) }),
			ByAuthServerRef:      ref(func(s *thv1.MCPServer) string { return nameOf(s.Spec.AuthServerRef) }),
			ByTelemetryConfig:    ref(func(s *thv1.MCPServer) string { return nameOf(s.Spec.TelemetryConfigRef) }),
			ByWebhookConfig:      ref(func(s *thv1.MCPServer) string { return nameOf(s.Spec.WebhookConfigRef) }),
			ByGroup:              ref(func(s *thv1.MCPServer) string { return nameOf(s.Spec.GroupRef) }),
			// The template's serviceAccountName is replaced by the
			// backend's account: only spec.serviceAccount names one.
			ByServiceAccount: ref(func(s *thv1.MCPServer) string { return deref(s.Spec.ServiceAccount) }),
		},
	},
	{
		Kind: thv1.KindMCPRemoteProxy,
		Refs: map[string]func(obj any) []string{
			ByOIDCConfig:         ref(func(p *thv1.MCPRemoteProxy) string { return nameOf(p.Spec.OIDCConfigRef) }),
			ByToolConfig:         ref(func(p *thv1.MCPRemoteProxy) string { return nameOf(p.Spec.ToolConfigRef) }),
			ByAuthzConfig:        ref(func(p *thv1.MCPRemoteProxy) string { return nameOf(p.Spec.AuthzConfigRef) }),
			ByAuthzConfigMap:     ref(func(p *thv1.MCPRemoteProxy) string { return authzConfigMap(p.Spec.AuthzConfig) }),
			ByExternalAuthConfig: ref(func(p *thv1.MCPRemoteProxy) string { return nameOf(p.Spec.ExternalAuthConfigRef) }),
			ByAuthServerRef:      ref(func(p *thv1.MCPRemoteProxy) string { return nameOf(p.Spec.AuthServerRef) }),
			ByTelemetryConfig:    ref(func(p *thv1.MCPRemoteProxy) string { return nameOf(p.Spec.TelemetryConfigRef) }),
			ByGroup:              ref(func(p *thv1.MCPRemoteProxy) string { return nameOf(p.Spec.GroupRef) }),
			ByServiceAccount: refs(func(p *thv1.MCPRemoteProxy) []string {
				return []string{deref(p.Spec.ServiceAccount), templateServiceAccount(p.Spec.PodTemplateSpec)}
			}),
		},
	},
	{
		// A VirtualMCPServer aggregates a group rather than joining it.
		Kind: thv1.KindVirtualMCPServer,
		Refs: map[string]func(obj any) []string{
			ByOIDCConfig:              ref(func(v *thv1.VirtualMCPServer) string { return nameOf(v.Spec.IncomingAuth.OIDCConfigRef) }),
			ByAuthzConfig:             ref(func(v *thv1.VirtualMCPServer) string { return nameOf(v.Spec.IncomingAuth.AuthzConfigRef) }),
			ByAuthzConfigMap:          ref(func(v *thv1.VirtualMCPServer) string { return authzConfigMap(v.Spec.IncomingAuth.AuthzConfig) }),
			ByAuthServerCAConfigMap:   refs(func(v *thv1.VirtualMCPServer) []string { return AuthServerCAConfigMaps(v.Spec.AuthServerConfig) }),
			ByTelemetryConfig:         ref(func(v *thv1.VirtualMCPServer) string { return nameOf(v.Spec.TelemetryConfigRef) }),
			ByToolConfig:              refs(thv1.VMCPToolConfigNames),
			ByExternalAuthConfig:      refs(thv1.VMCPExternalAuthConfigNames),
			ByCompositeToolDefinition: refs(thv1.VMCPCompositeToolNames),
			ByEmbeddingServer:         ref(func(v *thv1.VirtualMCPServer) string { return nameOf(v.Spec.EmbeddingServerRef) }),
			ByServiceAccount: refs(func(v *thv1.VirtualMCPServer) []string {
				return []string{deref(v.Spec.ServiceAccount), templateServiceAccount(v.Spec.PodTemplateSpec)}
			}),
		},
	},
	{
		// An MCPServerEntry runs nothing, but it is a member of its group
		// and holds its MCPExternalAuthConfig like a workload does.
		Kind: thv1.KindMCPServerEntry,
		Refs: map[string]func(obj any) []string{
			ByExternalAuthConfig: ref(func(e *thv1.MCPServerEntry) string { return nameOf(e.Spec.ExternalAuthConfigRef) }),
			ByGroup:              ref(func(e *thv1.MCPServerEntry) string { return nameOf(e.Spec.GroupRef) }),
		},
	},
	{
		// An EmbeddingServer and an MCPRegistry reference no config, but
		// their podTemplateSpec may name an account to run as.
		Kind: thv1.KindEmbeddingServer,
		Refs: map[string]func(obj any) []string{
			ByServiceAccount: ref(func(e *thv1.EmbeddingServer) string { return templateServiceAccount(e.Spec.PodTemplateSpec) }),
		},
	},
	{
		Kind: thv1.KindMCPRegistry,
		Refs: map[string]func(obj any) []string{
			ByServiceAccount: ref(func(r *thv1.MCPRegistry) string { return templateServiceAccount(r.Spec.PodTemplateSpec) }),
		},
	},
}

// deref is a name a pointer holds, "" for none.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// templateServiceAccount is the serviceAccountName of a podTemplateSpec,
// "" for none or for a template that does not decode (the workload's sync
// refuses that one anyway).
func templateServiceAccount(raw *runtime.RawExtension) string {
	if raw == nil || len(raw.Raw) == 0 {
		return ""
	}
	var tpl struct {
		Spec struct {
			ServiceAccountName string `json:"serviceAccountName"`
		} `json:"spec"`
	}
	if json.Unmarshal(raw.Raw, &tpl) != nil {
		return ""
	}
	return tpl.Spec.ServiceAccountName
}

// ref reads a single reference of workload kind T; any other object
// references nothing.
func ref[T any](name func(T) string) func(obj any) []string {
	return func(obj any) []string {
		if o, ok := obj.(T); ok {
			if n := name(o); n != "" {
				return []string{n}
			}
		}
		return nil
	}
}

// refs reads the references of workload kind T that can name several
// objects; any other object references nothing.
func refs[T any](names func(T) []string) func(obj any) []string {
	return func(obj any) []string {
		if o, ok := obj.(T); ok {
			return names(o)
		}
		return nil
	}
}

// authzConfigMap is the ConfigMap an authorization config of type
// configMap names, "" for none.
func authzConfigMap(a *thv1.InlineAuthz) string {
	if a == nil || a.Type != thv1.AuthzConfigTypeConfigMap || a.ConfigMap == nil {
		return ""
	}
	return a.ConfigMap.Name
}

// AuthServerCAConfigMaps are the ConfigMaps an embedded authorization
// server names as CA bundles: its upstreams' (oidcConfig or oauth2Config
// caBundleRef), then its trusted issuers'.
func AuthServerCAConfigMaps(c *thv1.EmbeddedAuthServerConfig) []string {
	if c == nil {
		return nil
	}
	var out []string
	add := func(ref *thv1.CABundleSource) {
		if ref != nil && ref.ConfigMapRef != nil && ref.ConfigMapRef.Name != "" {
			out = append(out, ref.ConfigMapRef.Name)
		}
	}
	for _, u := range c.UpstreamProviders {
		if u.OIDCConfig != nil {
			add(u.OIDCConfig.CABundleRef)
		}
		if u.OAuth2Config != nil {
			add(u.OAuth2Config.CABundleRef)
		}
	}
	for _, ti := range c.TrustedIssuers {
		add(ti.CABundleRef)
	}
	return out
}

// named is a reference by name; nameOf reads it, "" for none.
type named interface {
	*thv1.OIDCConfigReference | *thv1.ToolConfigReference | *thv1.AuthzConfigReference | *thv1.ExternalAuthConfigReference | *thv1.TelemetryConfigReference | *thv1.WebhookConfigReference | *thv1.GroupRef | *thv1.AuthServerRef | *thv1.EmbeddingServerRef
}

func nameOf[R named](r R) string {
	if r == nil {
		return ""
	}
	switch v := any(r).(type) {
	case *thv1.OIDCConfigReference:
		return v.Name
	case *thv1.ToolConfigReference:
		return v.Name
	case *thv1.AuthzConfigReference:
		return v.Name
	case *thv1.ExternalAuthConfigReference:
		return v.Name
	case *thv1.TelemetryConfigReference:
		return v.Name
	case *thv1.WebhookConfigReference:
		return v.Name
	case *thv1.GroupRef:
		return v.Name
	case *thv1.EmbeddingServerRef:
		return v.Name
	case *thv1.AuthServerRef:
		if v.Kind != thv1.KindMCPExternalAuthConfig {
			return ""
		}
		return v.Name
	}
	return ""
}

// ReferencedBy returns the rows of the kinds that can make references of
// index indexName.
func ReferencedBy(indexName string) []Workload {
	var out []Workload
	for _, w := range Workloads {
		if _, ok := w.Refs[indexName]; ok {
			out = append(out, w)
		}
	}
	return out
}

// WorkloadFor returns the table row of kind.
func WorkloadFor(kind string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Kind == kind {
			return w, true
		}
	}
	return Workload{}, false
}

// Key is the namespaced index value of a referenced object.
func Key(namespace, name string) string { return namespace + "/" + name }

func namespaceOf(obj any) string {
	if m, err := metaNamespace(obj); err == nil {
		return m
	}
	return ""
}

func keyFunc(read func(any) []string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		if read == nil {
			return nil, nil
		}
		var keys []string
		for _, name := range read(obj) {
			if name != "" && !slices.Contains(keys, Key(namespaceOf(obj), name)) {
				keys = append(keys, Key(namespaceOf(obj), name))
			}
		}
		return keys, nil
	}
}

// Indexers returns the indexers to add to the informer of kind.
func Indexers(kind string) (cache.Indexers, error) {
	w, ok := WorkloadFor(kind)
	if !ok {
		return nil, fmt.Errorf("no index table row for kind %q", kind)
	}
	idx := cache.Indexers{}
	for name, read := range w.Refs {
		idx[name] = keyFunc(read)
	}
	return idx, nil
}

// References returns the index values obj has under index name; the
// event handlers call it on the old and the new object so that a change
// from A to B re-syncs both A and B.
func References(kind, indexName string, obj any) []string {
	idx, err := Indexers(kind)
	if err != nil {
		return nil
	}
	f, ok := idx[indexName]
	if !ok {
		return nil
	}
	keys, _ := f(obj)
	return keys
}

// ReferenceNames is References as the names of the referenced objects,
// the keys of their controllers' queues.
func ReferenceNames(kind, indexName string, obj any) []cache.ObjectName {
	keys := References(kind, indexName, obj)
	out := make([]cache.ObjectName, 0, len(keys))
	for _, k := range keys {
		if n, err := cache.ParseObjectName(k); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Referrers returns the sorted names of the objects in indexer whose index
// indexName has value key. It costs O(referrers), not O(namespace).
func Referrers(indexer cache.Indexer, indexName, key string) ([]string, error) {
	objs, err := indexer.ByIndex(indexName, key)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		if m, err := metaName(o); err == nil {
			names = append(names, m)
		}
	}
	sort.Strings(names)
	return names, nil
}
