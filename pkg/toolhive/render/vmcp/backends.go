package vmcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// What an MCPServerEntry backend brings into the vMCP pod, as ToolHive's
// operator wires it at the pinned release.
const (
	// backendTypeEntry marks an entry's backend in config.yaml. vmcp
	// reads the type only to accept caBundlePath, which it refuses on a
	// backend of any other type; ToolHive's operator writes no type, so
	// hivekeeper writes it only beside a caBundlePath, where ToolHive's
	// config would not start.
	backendTypeEntry = "entry"
	// caBundleBase is where an entry's CA bundle ConfigMap is mounted,
	// one directory per entry: <base>/<entry>/<key>.
	caBundleBase       = "/etc/toolhive/ca-bundles"
	defaultCABundleKey = "ca.crt"
	// envHeaderForwardPrefix + the entry's name (envToken) carries the
	// entry's headerForward as JSON; vmcp reads every variable of this
	// prefix at start and attaches the headers to the backend of that name.
	envHeaderForwardPrefix = "TOOLHIVE_HEADER_FORWARD_"
	// headerSecretPrefix + header + "_" + entry (envTokens) is the secret
	// identifier a header from a Secret is named by in that JSON; vmcp
	// reads its value from wiring.EnvSecretPrefix + identifier, which
	// the pod gets from a secretKeyRef.
	headerSecretPrefix = "HEADER_FORWARD_"
)

// The reasons of the outgoing auth conditions, ToolHive's.
const (
	reasonAuthConverted = "ConversionSucceeded"
	reasonAuthFailed    = "ConversionFailed"
	// reasonAmbiguousSubject is an xaa strategy that names no subject
	// provider beside an authorization server of several upstreams.
	reasonAmbiguousSubject = "AmbiguousSubjectProvider"
)

// errAmbiguousSubject is why such a strategy is not built, in ToolHive's
// words.
var errAmbiguousSubject = fmt.Errorf("failed to inject subject provider name: " +
	"SubjectProviderName must be set explicitly for xaa when more than one upstream is configured")

// member is one group member that can be a backend: its backend entry
// and what else of it the vMCP needs.
type member struct {
	schema.VMCPBackend
	// AuthConfig is the member's own spec.externalAuthConfigRef, "" for
	// none: the strategy of its backend unless spec.outgoingAuth.backends
	// names it.
	AuthConfig string
	// Metadata is what ToolHive's discovery records of the member, written
	// with its backend in inline mode.
	Metadata map[string]string
	// Entry is the member when it is an MCPServerEntry (its CA bundle and
	// headers reach the pod), nil otherwise.
	Entry *thv1.MCPServerEntry
	// Serves is false for a member that is no backend (being deleted; an
	// entry whose checks failed), which ToolHive's operator still mounts
	// the CA bundle and headers of when it is an entry.
	Serves bool
}

// The metadata of a backend that ToolHive's discovery records, and the
// workload types it names.
const (
	metaGroup        = "group"
	metaNamespace    = "namespace"
	metaToolType     = "tool_type"
	metaWorkloadType = "workload_type"
	metaRemoteURL    = "remote_url"
	toolTypeMCP      = "mcp"
)

// backendMetadata is the metadata ToolHive's discovery gives a member's
// backend (staticBackends adds the group): its annotations but
// Kubernetes' own, then the tool and workload type, its remote URL (a
// remote proxy's or an entry's) and namespace. The workload's phase, which ToolHive
// v0.47.0 also recorded, is left out as ToolHive v0.63.0 leaves it out,
// so a member's phase change does not roll the vMCP.
func backendMetadata(obj metav1.Object, workloadType, remoteURL string) map[string]string {
	out := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if !kubernetesAnnotation(k) {
			out[k] = v
		}
	}
	out[metaToolType] = toolTypeMCP
	out[metaWorkloadType] = workloadType
	if remoteURL != "" {
		out[metaRemoteURL] = remoteURL
	}
	if ns := obj.GetNamespace(); ns != "" {
		out[metaNamespace] = ns
	}
	return out
}

// kubernetesAnnotation reports whether an annotation is one of
// Kubernetes' own, which ToolHive's discovery does not record.
func kubernetesAnnotation(key string) bool {
	for _, p := range []string{"kubectl.kubernetes.io/", "kubernetes.io/", "deployment.kubernetes.io/", "k8s.io/"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// entryBackend is an MCPServerEntry's backend: its remote URL as written
// (vmcp connects to it directly, there is no proxy), its transport and,
// with a CA bundle, the path it is mounted at and type entry. Like ToolHive,
// only an entry whose checks passed (phase Valid) is a backend.
func entryBackend(e *thv1.MCPServerEntry) member {
	b := schema.VMCPBackend{Name: e.Name, URL: e.Spec.RemoteURL, Transport: e.Spec.Transport}
	if ca := entryCABundle(e); ca != nil {
		b.CABundlePath = path.Join(caBundleBase, e.Name, caBundleKey(ca))
		b.Type = backendTypeEntry
	}
	return member{VMCPBackend: b, AuthConfig: authRefName(e.Spec.ExternalAuthConfigRef), Entry: e,
		Metadata: backendMetadata(e, "server_entry", e.Spec.RemoteURL),
		Serves:   e.DeletionTimestamp == nil && e.Status.Phase == thv1.MCPServerEntryPhaseValid}
}

func authRefName(r *thv1.ExternalAuthConfigReference) string {
	if r == nil {
		return ""
	}
	return r.Name
}

func entryCABundle(e *thv1.MCPServerEntry) *thv1.ConfigMapKeyRef {
	if e.Spec.CABundleRef == nil || e.Spec.CABundleRef.ConfigMapRef == nil || e.Spec.CABundleRef.ConfigMapRef.Name == "" {
		return nil
	}
	return e.Spec.CABundleRef.ConfigMapRef
}

func caBundleKey(ca *thv1.ConfigMapKeyRef) string {
	if ca.Key == "" {
		return defaultCABundleKey
	}
	return ca.Key
}

// caBundleVolumeName is ToolHive's volume name of an entry's CA bundle:
// ca-bundle-<entry>, or, beyond a DNS label's 63 characters, the name cut
// to 44 characters and the first 8 hex digits of its SHA-256. An entry
// name with dots (a DNS subdomain) gets the second form with the dots as
// '-', where ToolHive's name would not be a volume name the API server
// accepts.
func caBundleVolumeName(entry string) string {
	name := "ca-bundle-" + entry
	if len(name) <= 63 && !strings.Contains(entry, ".") {
		return name
	}
	sum := sha256.Sum256([]byte(entry))
	cut := strings.TrimRight(strings.ReplaceAll(entry[:min(len(entry), 44)], ".", "-"), "-")
	return "ca-bundle-" + cut + "-" + hex.EncodeToString(sum[:4])
}

// entryWiring is what the group's entries need in the pod, valid or not,
// as ToolHive's operator mounts them for every entry of the group: each CA
// bundle's ConfigMap mounted read-only under caBundleBase, and each
// headerForward as ToolHive's vmcp reads it from the environment (one
// JSON variable per entry, one secretKeyRef variable per header from a
// Secret; values of Secrets never appear elsewhere). Variables are sorted
// by name.
func entryWiring(members []member) (env []corev1.EnvVar, vols []corev1.Volume, mounts []corev1.VolumeMount, err error) {
	for _, m := range members {
		e := m.Entry
		if e == nil {
			continue
		}
		if ca := entryCABundle(e); ca != nil {
			key := caBundleKey(ca)
			name := caBundleVolumeName(e.Name)
			vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: ca.Name},
				Items:                []corev1.KeyToPath{{Key: key, Path: key}},
			}}})
			mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Join(caBundleBase, e.Name), ReadOnly: true})
		}
		hf := e.Spec.HeaderForward
		if hf == nil {
			continue
		}
		manifest := struct {
			Plain  map[string]string `json:"addPlaintextHeaders,omitempty"`
			Secret map[string]string `json:"addHeadersFromSecret,omitempty"`
		}{Plain: hf.AddPlaintextHeaders}
		for _, h := range hf.AddHeadersFromSecret {
			if h.ValueSecretRef == nil {
				continue
			}
			id := headerSecretPrefix + envToken(h.HeaderName) + "_" + envToken(e.Name)
			if manifest.Secret == nil {
				manifest.Secret = map[string]string{}
			}
			manifest.Secret[h.HeaderName] = id
			env = append(env, wiring.SecretEnv(wiring.EnvSecretPrefix+id, h.ValueSecretRef.Name, h.ValueSecretRef.Key))
		}
		if len(manifest.Plain) == 0 && len(manifest.Secret) == 0 {
			continue
		}
		raw, err := json.Marshal(manifest)
		if err != nil {
			return nil, nil, nil, invalidSpec("MCPServerEntry %s: spec.headerForward: %v", e.Name, err)
		}
		env = append(env, corev1.EnvVar{Name: envHeaderForwardPrefix + envToken(e.Name), Value: string(raw)})
	}
	slices.SortFunc(env, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return env, vols, mounts, nil
}

// envToken is how ToolHive spells a name inside a variable name: upper
// case, every character other than A-Z, 0-9 and '_' replaced by '_'.
func envToken(s string) string {
	return envNameInvalid.ReplaceAllString(strings.ToUpper(s), "_")
}

// AuthCondition is one outgoing auth condition of the server: True when
// OK, False with a Warning event otherwise.
type AuthCondition struct {
	Type, Reason, Message string
	OK                    bool
}

// backendAuth is outgoingAuth resolved against the group's members: the
// section, the variables its secrets need, the backends that are served
// and the conditions to report.
type backendAuth struct {
	Section *schema.VMCPOutgoingAuth
	Env     []corev1.EnvVar
	// Served are the members that are backends, sorted by name: in inline
	// mode the ones config.yaml lists, in discovered mode the ones vmcp's
	// own discovery keeps.
	Served []member
	// Dropped names the members left out because their strategy could
	// not be built, sorted.
	Dropped    []string
	Conditions []AuthCondition
}

// resolveBackendAuth builds outgoingAuth as ToolHive's operator does:
//
//   - the default strategy from spec.outgoingAuth.default and the
//     strategies of spec.outgoingAuth.backends, in both modes (a spec
//     strategy of type discovered is unauthenticated);
//   - in inline mode also each member's own externalAuthConfigRef (found
//     ones only) as its backend's strategy, under the spec's, with an
//     embedded authorization server's first upstream (firstUpstream) as
//     the subject provider of token exchange, AWS STS and xaa strategies
//     that name none. In discovered mode vmcp reads the members' configs and
//     names the subject provider itself.
//
// An xaa strategy that names no subject provider beside an authorization
// server of several upstreams (upstreams > 1) is not built in either mode
// (reason AmbiguousSubjectProvider): ToolHive's operator does not build it,
// and its vmcp refuses to start with such a strategy in config.yaml.
//
// A member whose own strategy cannot be built (a config missing, not
// valid, or of a type hivekeeper does not apply) is left out of the
// served set, as ToolHive's operator leaves it out of config.yaml in
// inline mode (a backend absent from outgoingAuth.backends would fall
// through to the default strategy, an identity it was not given) and its
// vmcp's discovery leaves it out in discovered mode; its condition says
// why. A spec strategy that cannot be built does the same in inline mode;
// in discovered mode, where vmcp would serve that backend anyway, it fails
// the whole config, as ToolHive's converter fails it, and so does a
// default that cannot be built in either mode: every backend would be
// called with less authentication than asked.
//
// The variables of the secrets are ToolHive's, in its order: those of the
// members' configs (a member the spec overrides excepted), sorted, then
// those of the spec's backends, sorted, then the default's; none at all
// without spec.outgoingAuth.
func resolveBackendAuth(v *thv1.VirtualMCPServer, members []member, specConfigs, memberConfigs map[string]*thv1.MCPExternalAuthConfig,
	firstUpstream string, upstreams int) (*backendAuth, error) {
	inline := !Discovers(v)
	out := &backendAuth{Section: &schema.VMCPOutgoingAuth{Source: outgoingAuthSource(v)}}
	ambiguous := func(s *thv1.VMCPBackendAuthStrategy) bool {
		return upstreams > 1 && s.XAA != nil && s.XAA.SubjectProviderName == ""
	}
	inject := func(s *thv1.VMCPBackendAuthStrategy) *thv1.VMCPBackendAuthStrategy {
		if inline && firstUpstream != "" {
			if te := s.TokenExchange; te != nil && te.SubjectProviderName == "" {
				te.SubjectProviderName = firstUpstream
			}
			if sts := s.AwsSts; sts != nil && sts.SubjectProviderName == "" {
				sts.SubjectProviderName = firstUpstream
			}
			if x := s.XAA; x != nil && x.SubjectProviderName == "" {
				x.SubjectProviderName = firstUpstream
			}
		}
		return s
	}
	o := v.Spec.OutgoingAuth
	if o == nil {
		o = &thv1.OutgoingAuth{}
	}
	if o.Default != nil {
		s, err := specStrategy("spec.outgoingAuth.default", o.Default, specConfigs)
		if err != nil {
			return nil, err
		}
		if ambiguous(s) {
			return nil, invalidSpec("spec.outgoingAuth.default: %v", errAmbiguousSubject)
		}
		out.Section.Default = inject(s)
		out.Conditions = append(out.Conditions, AuthCondition{Type: naming.ConditionDefaultAuthConfig, Reason: reasonAuthConverted,
			Message: "the default strategy is built", OK: true})
	}
	strategies := map[string]*thv1.VMCPBackendAuthStrategy{}
	failed := map[string]bool{}
	for _, m := range members {
		if m.AuthConfig == "" {
			continue
		}
		cond := naming.ConditionDiscoveredAuthConfigPrefix + m.Name
		s, reason, err := memberStrategy(m, memberConfigs)
		if err == nil && ambiguous(s) {
			reason, err = reasonAmbiguousSubject, fmt.Errorf("backend %s is not served: its MCPExternalAuthConfig %q: %w", m.Name, m.AuthConfig, errAmbiguousSubject)
		}
		if err != nil {
			failed[m.Name] = true
			out.Conditions = append(out.Conditions, AuthCondition{Type: cond, Reason: reason, Message: err.Error()})
			continue
		}
		out.Conditions = append(out.Conditions, AuthCondition{Type: cond, Reason: reasonAuthConverted, OK: true,
			Message: fmt.Sprintf("the strategy of backend %s is built from its MCPExternalAuthConfig %s", m.Name, m.AuthConfig)})
		if _, overridden := o.Backends[m.Name]; !overridden {
			strategies[m.Name] = inject(s)
		}
	}
	spec := map[string]*thv1.VMCPBackendAuthStrategy{}
	for _, name := range slices.Sorted(maps.Keys(o.Backends)) {
		b := o.Backends[name]
		cond := naming.ConditionBackendAuthConfigPrefix + name
		path := fmt.Sprintf("spec.outgoingAuth.backends[%s]", name)
		s, err := specStrategy(path, &b, specConfigs)
		reason := reasonAuthFailed
		if err == nil && ambiguous(s) {
			reason = reasonAmbiguousSubject
			err = invalidSpec("%s: %v", path, errAmbiguousSubject)
		}
		if err != nil && !inline {
			return nil, err
		}
		if err != nil {
			failed[name] = true
			out.Conditions = append(out.Conditions, AuthCondition{Type: cond, Reason: reason,
				Message: fmt.Sprintf("backend %s is not served: %v", name, err)})
			continue
		}
		spec[name] = inject(s)
		strategies[name] = spec[name]
		out.Conditions = append(out.Conditions, AuthCondition{Type: cond, Reason: reasonAuthConverted, OK: true,
			Message: fmt.Sprintf("the strategy of backend %s is built", name)})
	}
	switch {
	case inline && len(strategies) > 0:
		out.Section.Backends = strategies
	case !inline && len(spec) > 0:
		out.Section.Backends = spec
	}
	for _, m := range members {
		if !m.Serves {
			continue
		}
		// A failure is overcome by a strategy from the other source (a
		// spec entry over a broken member config).
		if failed[m.Name] && strategies[m.Name] == nil {
			out.Dropped = append(out.Dropped, m.Name)
			continue
		}
		out.Served = append(out.Served, m)
	}
	if v.Spec.OutgoingAuth != nil {
		out.Env = authSecretEnv(o, members, specConfigs, memberConfigs)
	}
	return out, nil
}

// authSecretEnv are the variables of the outgoing auth secrets, as
// ToolHive's operator mounts them: the members' own configs (each once;
// a member the spec overrides excepted), sorted, then the configs of
// spec.outgoingAuth.backends (each once), sorted, then the default's. A
// config that is missing adds nothing.
func authSecretEnv(o *thv1.OutgoingAuth, members []member, specConfigs, memberConfigs map[string]*thv1.MCPExternalAuthConfig) []corev1.EnvVar {
	var fromMembers, fromBackends []corev1.EnvVar
	seen := map[string]bool{}
	for _, m := range members {
		if _, overridden := o.Backends[m.Name]; m.AuthConfig == "" || overridden || seen[m.AuthConfig] {
			continue
		}
		seen[m.AuthConfig] = true
		if cfg := memberConfigs[m.AuthConfig]; cfg != nil {
			fromMembers = append(fromMembers, secretEnv(cfg)...)
		}
	}
	seen = map[string]bool{}
	for _, b := range o.Backends {
		if r := b.ExternalAuthConfigRef; r != nil && !seen[r.Name] {
			seen[r.Name] = true
			if cfg := specConfigs[r.Name]; cfg != nil {
				fromBackends = append(fromBackends, secretEnv(cfg)...)
			}
		}
	}
	byName := func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) }
	slices.SortStableFunc(fromMembers, byName)
	slices.SortStableFunc(fromBackends, byName)
	out := slices.Concat(fromMembers, fromBackends)
	if d := o.Default; d != nil && d.ExternalAuthConfigRef != nil {
		if cfg := specConfigs[d.ExternalAuthConfigRef.Name]; cfg != nil {
			out = append(out, secretEnv(cfg)...)
		}
	}
	return out
}

// specStrategy converts a strategy of spec.outgoingAuth. Its configs were
// resolved before the build (a missing one makes the server wait).
func specStrategy(path string, b *thv1.BackendAuth, configs map[string]*thv1.MCPExternalAuthConfig) (*thv1.VMCPBackendAuthStrategy, error) {
	switch b.Type {
	case thv1.BackendAuthTypeDiscovered:
		return &thv1.VMCPBackendAuthStrategy{Type: strategyUnauth}, nil
	case thv1.BackendAuthTypeExternalAuthConfigRef:
	default:
		return nil, invalidSpec("%s.type: %q is not discovered or externalAuthConfigRef", path, b.Type)
	}
	if b.ExternalAuthConfigRef == nil {
		return nil, invalidSpec("%s: type externalAuthConfigRef requires externalAuthConfigRef", path)
	}
	cfg := configs[b.ExternalAuthConfigRef.Name]
	if cfg == nil {
		return nil, invalidSpec("%s: MCPExternalAuthConfig %q not resolved", path, b.ExternalAuthConfigRef.Name)
	}
	return strategyOf(path, cfg)
}

// memberStrategy converts a member's own MCPExternalAuthConfig, with the
// condition reason of a failure: ToolHive's ConversionFailed, or the
// config's own Valid=False reason, which ToolHive mirrors.
func memberStrategy(m member, configs map[string]*thv1.MCPExternalAuthConfig) (*thv1.VMCPBackendAuthStrategy, string, error) {
	cfg := configs[m.AuthConfig]
	if cfg == nil {
		return nil, reasonAuthFailed, fmt.Errorf("backend %s is not served: its MCPExternalAuthConfig %q is not found", m.Name, m.AuthConfig)
	}
	if c := meta.FindStatusCondition(cfg.Status.Conditions, thv1.ConditionValid); c != nil && c.Status == metav1.ConditionFalse {
		reason := c.Reason
		if reason == "" {
			reason = reasonAuthFailed
		}
		return nil, reason, fmt.Errorf("backend %s is not served: its MCPExternalAuthConfig %q is not valid: %s", m.Name, m.AuthConfig, c.Message)
	}
	s, err := strategyOf(fmt.Sprintf("backend %s is not served: its externalAuthConfigRef", m.Name), cfg)
	if err != nil {
		return nil, reasonAuthFailed, err
	}
	return s, "", nil
}

// staticBackends are config.yaml's backends in inline mode, as ToolHive's
// operator lists them: the served members sorted by name, each with the
// metadata of its discovery and, for an entry, its CA bundle path (the
// type entry is hivekeeper's: vmcp accepts caBundlePath only on such a
// backend).
func staticBackends(v *thv1.VirtualMCPServer, served []member) []thv1.VMCPStaticBackend {
	out := make([]thv1.VMCPStaticBackend, 0, len(served))
	for _, m := range served {
		md := maps.Clone(m.Metadata)
		if md == nil {
			md = map[string]string{}
		}
		md[metaGroup] = v.Spec.GroupRef.Name
		out = append(out, thv1.VMCPStaticBackend{Name: m.Name, URL: m.URL, Transport: m.Transport, Type: m.Type,
			CABundlePath: m.CABundlePath, Metadata: md})
	}
	return out
}

// MemberView is what of a group member a vMCP depends on: its backend
// entry and metadata, the MCPExternalAuthConfig it names, and an entry's
// CA bundle and headers (as JSON, to compare). Two views are equal
// exactly when the member's change reaches nothing of the vMCP's, so the
// controller's handlers compare them to drop a member's status writes.
type MemberView struct {
	schema.VMCPBackend
	authConfig string
	extras     string
	serves     bool
}

// ViewMember projects a member of any backend kind onto its MemberView.
func ViewMember(obj any) MemberView {
	m, ok := memberBackend(obj)
	v := MemberView{VMCPBackend: m.VMCPBackend, authConfig: m.AuthConfig, serves: ok && m.Serves}
	extras := []any{m.Metadata}
	if m.Entry != nil {
		extras = append(extras, m.Entry.Spec.HeaderForward, m.Entry.Spec.CABundleRef)
	}
	raw, _ := json.Marshal(extras)
	v.extras = string(raw)
	return v
}

// AuthConfig is the MCPExternalAuthConfig a member names in its own
// externalAuthConfigRef, "" for none.
func (v MemberView) AuthConfig() string {
	return v.authConfig
}
