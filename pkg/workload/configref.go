package workload

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// ConfigObject is a config kind workloads reference by name. Every such
// kind has the same status (thv1.ConfigStatus), so one controller
// (ConfigController) and one resolution path serve them all.
type ConfigObject interface {
	Object
	GetStatus() *thv1.ConfigStatus
}

// ConfigKind declares a config kind that workloads reference by name
// (MCPOIDCConfig, MCPToolConfig; the next ones are declared the same way).
// Everything done with such a reference follows from it: the lister a
// workload reads, the condition it reports, the referrers re-synced when
// the config changes, and the config's own controller (finalizer,
// configHash, referencingWorkloads, deletion protection).
type ConfigKind[T ConfigObject] struct {
	// Kind names the config kind in messages and the reference list.
	Kind string
	// Resource is the kind's resource, the label of its writes.
	Resource string
	// Finalizer holds a config while workloads reference it.
	Finalizer string
	// Informer picks the kind's informer from a factory.
	Informer func(informers.SharedInformerFactory) cache.SharedIndexInformer
	// Get reads a config from an indexer holding the kind (a lister).
	Get func(indexer cache.Indexer, namespace, name string) (T, error)
	// Patch is the kind's typed Patch in namespace.
	Patch func(client versioned.Interface, namespace string) framework.PatchFunc[T]
	// Spec returns the config's spec: what its hash covers, and what a
	// referrer consumes.
	Spec func(T) any
	// Validate returns every problem of a config the schema cannot reject
	// (or that was stored before it could), in field order.
	Validate func(T) []string
	// ReleaseChecks, when set, returns the problems of a config that
	// depend on the ToolHive release written (release.Release), after
	// Validate's.
	ReleaseChecks func(T, release.Release) []string
	// Refuse, when set, returns the reason and message of a config whose
	// spec is valid but that neither ToolHive's open-source operator nor
	// hivekeeper applies (an MCPExternalAuthConfig of type obo): its Valid
	// condition turns False with that reason, so the config, not each
	// workload that references it, reports the problem. "" accepts it.
	Refuse func(T) (reason, message string)
	// Advisories, when set, are the conditions the config carries beside
	// Valid, valid or not (ToolHive's advisories), from its spec alone.
	Advisories func(T) []wiring.Advisory
	// Index maps a workload to "<ns>/<name>" of the config it references.
	Index string
	// AlsoIndexes are the other references workloads make to the kind
	// (an MCPExternalAuthConfig is also named by spec.authServerRef):
	// the config's controller counts those referrers too.
	AlsoIndexes []string
	// FullStatus, for a kind whose status has fields of its own beside
	// ConfigStatus (ToolHive's), returns the status as read and as it is
	// to be written, from the ConfigStatus about to be written and the
	// validation problems; nil for a kind whose status is ConfigStatus.
	FullStatus func(cfg T, status *thv1.ConfigStatus, problems []string) (old, desired any)
	// ValidReason and InvalidReason are the reasons of the config's own
	// Valid condition, ToolHive's for the kind ("" for ConfigValid and
	// ConfigInvalid).
	ValidReason, InvalidReason string
	// Condition is the workload condition that reports the reference, with
	// its reasons, and Waiting the Ready reason while a workload waits.
	Condition                          string
	Valid, NotFound, NotValid, Waiting string
	// MirrorInvalid makes a config's Valid=False reason and message those
	// of the workload's condition, instead of NotValid and a message of
	// hivekeeper's: ToolHive's operator mirrors an MCPExternalAuthConfig's
	// failure (EnterpriseRequired, ValidationFailed) onto
	// ExternalAuthConfigValidated, so a script reads the cause on the
	// workload. A config not yet validated still reads NotValid.
	MirrorInvalid bool
}

// indexes are every index through which workloads reference the kind.
func (k ConfigKind[T]) indexes() []string {
	return append([]string{k.Index}, k.AlsoIndexes...)
}

// ConfigRefs is a ConfigKind bound to the informers of a controller.
type ConfigRefs[T ConfigObject] struct {
	ConfigKind[T]
	informer *framework.Informer
}

// Bind binds the kind to d's informers.
func (k ConfigKind[T]) Bind(d *framework.Deps) *ConfigRefs[T] {
	return &ConfigRefs[T]{ConfigKind: k, informer: d.ToolhiveInformer(k.Informer)}
}

// check turns the config a reference names (found false when the lister
// does not have it) into the reference's condition. A missing config, or
// one whose Valid condition is not True, is not usable: a workload is not
// deployed without the configuration it asked for.
func (k ConfigKind[T]) check(name string, cfg T, found bool) (ok bool, reason, message string) {
	switch {
	case !found:
		return false, k.NotFound, fmt.Sprintf("%s %q not found", k.Kind, name)
	case !meta.IsStatusConditionTrue(cfg.GetStatus().Conditions, thv1.ConditionValid):
		if c := meta.FindStatusCondition(cfg.GetStatus().Conditions, thv1.ConditionValid); k.MirrorInvalid && c != nil && c.Status == metav1.ConditionFalse {
			reason := c.Reason
			if reason == "" {
				reason = thv1.ReasonInvalidExternalAuthConfig
			}
			return false, reason, fmt.Sprintf("%s %q is not valid: %s", k.Kind, name, c.Message)
		}
		return false, k.NotValid, fmt.Sprintf("%s %q is not valid", k.Kind, name)
	}
	return true, k.Valid, fmt.Sprintf("%s %q is valid", k.Kind, name)
}

// Resolve resolves a workload's reference (name "" for none) from the
// lister — never the API, never a write: the config's own controller owns
// it — and reports it. It returns the config and its hash, which the
// workload records in status. ok is false when the workload must wait; the
// report then says so (Pending, Ready=False with the Waiting reason). The
// config's own events re-sync the workload through the reference index.
func (c *ConfigRefs[T]) Resolve(r *Report, namespace, name string) (cfg T, hash string, ok bool) {
	var zero T
	if name == "" {
		r.Remove(c.Condition)
		return zero, "", true
	}
	cfg, err := c.Get(c.informer.Indexer(), namespace, name)
	ok, reason, message := c.check(name, cfg, err == nil)
	if !ok {
		r.SetFalse(c.Condition, reason, message)
		r.Unusable(c.Waiting, message)
		return zero, "", false
	}
	r.Set(c.Condition, metav1.ConditionTrue, reason, message)
	return cfg, cfg.GetStatus().ConfigHash, true
}

// Exists reports whether the config namespace/name is in the lister.
func (c *ConfigRefs[T]) Exists(namespace, name string) bool {
	_, err := c.Get(c.informer.Indexer(), namespace, name)
	return err == nil
}

// ChangeMatters reports whether an update of a config changes anything a
// referrer consumes: the hash, validity or deletion. A spec change alone
// does not count: the config's controller validates it and writes its
// new configHash next, and that event re-syncs the referrers once, on a
// validated spec (re-syncing on both made every referrer sync twice in
// quick succession, the second against a Deployment cache that had not
// seen the first's write yet). The config's controller also rewrites
// status.referencingWorkloads whenever a referrer comes or goes;
// re-syncing every referrer for that would make creating N referrers
// cost O(N²) syncs.
func (k ConfigKind[T]) ChangeMatters(oldObj, newObj any) bool {
	o, ok1 := oldObj.(T)
	n, ok2 := newObj.(T)
	if !ok1 || !ok2 {
		return false
	}
	return o.GetStatus().ConfigHash != n.GetStatus().ConfigHash ||
		validStatus(o.GetStatus()) != validStatus(n.GetStatus()) ||
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
}

func validStatus(s *thv1.ConfigStatus) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(s.Conditions, thv1.ConditionValid); c != nil {
		return c.Status
	}
	return ""
}

// watchReferrers re-syncs, through enqueue, exactly the workloads of
// primary that reference a config that appeared, went away or changed in a
// way that matters, and makes loop wait for the config cache. A workload
// kind whose row cannot make the reference watches nothing.
func (c *ConfigRefs[T]) watchReferrers(row index.Workload, primary *framework.Informer, enqueue func(cache.ObjectName), loop *framework.Loop) error {
	if _, ok := row.Refs[c.Index]; !ok {
		return nil
	}
	referrers := func(obj any) { EnqueueReferrers(primary.Indexer(), c.Index, obj, enqueue) }
	synced, err := c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: referrers,
		UpdateFunc: func(oldObj, newObj any) {
			if c.ChangeMatters(oldObj, newObj) {
				referrers(newObj)
			}
		},
		DeleteFunc: referrers,
	})
	if err != nil {
		return err
	}
	loop.AddSynced(synced)
	return nil
}

// EnqueueReferrers enqueues every object of indexer whose indexName value is
// the key of obj (a referenced object or its tombstone). It costs
// O(referrers): no namespace is listed.
func EnqueueReferrers(indexer cache.Indexer, indexName string, obj any, enqueue func(cache.ObjectName)) {
	m, ok := framework.MetaFromObj(obj)
	if !ok {
		return
	}
	names, err := index.Referrers(indexer, indexName, index.Key(m.GetNamespace(), m.GetName()))
	if err != nil {
		return
	}
	for _, n := range names {
		enqueue(cache.NewObjectName(m.GetNamespace(), n))
	}
}

// nameIn is the name of the config of this kind that obj references, as
// row (the reference index's readers) reads it; "" for none, or when the
// workload kind cannot make such a reference.
func (c *ConfigRefs[T]) nameIn(row index.Workload, obj any) string {
	if read, ok := row.Refs[c.Index]; ok {
		if names := read(obj); len(names) > 0 {
			return names[0]
		}
	}
	return ""
}

// ProxyRefs are the configs an MCPServer or MCPRemoteProxy references,
// resolved; nil for a reference the workload does not make. The hashes
// are what the workload records in status (oidcConfigHash, ...).
type ProxyRefs struct {
	OIDC                                                       *thv1.MCPOIDCConfig
	Tools                                                      *thv1.MCPToolConfig
	Authz                                                      *thv1.MCPAuthzConfig
	ExtAuth                                                    *thv1.MCPExternalAuthConfig
	Telemetry                                                  *thv1.MCPTelemetryConfig
	Webhooks                                                   *thv1.MCPWebhookConfig
	OIDCHash, ToolsHash, AuthzHash, ExtAuthHash, TelemetryHash string
	WebhooksHash                                               string
	// AuthServer is the MCPExternalAuthConfig spec.authServerRef names.
	AuthServer     *thv1.MCPExternalAuthConfig
	AuthServerHash string
}

// ResolveProxyRefs resolves the config references of a proxy workload,
// named as the reference index reads them, and reports each. ok is false
// when the workload must wait for one of them.
func (b *Base) ResolveProxyRefs(r *Report, obj Object) (refs ProxyRefs, ok bool) {
	ns := obj.GetNamespace()
	var oidcOK, toolsOK, authzOK, extAuthOK, telemetryOK, webhooksOK bool
	refs.OIDC, refs.OIDCHash, oidcOK = b.OIDC.Resolve(r, ns, b.OIDC.nameIn(b.row, obj))
	if oidcOK {
		// Advisory, as ToolHive's operator reports it on both proxy kinds;
		// a cache that cannot answer leaves the condition as it was.
		_ = OIDCCABundleCondition(r, ns, refs.OIDC, b.Children.ConfigMaps.Get)
	}
	refs.Tools, refs.ToolsHash, toolsOK = b.Tools.Resolve(r, ns, b.Tools.nameIn(b.row, obj))
	refs.Authz, refs.AuthzHash, authzOK = b.Authz.Resolve(r, ns, b.Authz.nameIn(b.row, obj))
	refs.ExtAuth, refs.ExtAuthHash, extAuthOK = b.ExtAuth.Resolve(r, ns, b.ExtAuth.nameIn(b.row, obj))
	refs.Telemetry, refs.TelemetryHash, telemetryOK = b.Telemetry.Resolve(r, ns, b.Telemetry.nameIn(b.row, obj))
	refs.Webhooks, refs.WebhooksHash, webhooksOK = b.Webhooks.Resolve(r, ns, b.Webhooks.nameIn(b.row, obj))
	// Last: a refused kind fails the workload, which a later Pending
	// must not turn back into waiting.
	var authServerOK bool
	refs.AuthServer, refs.AuthServerHash, authServerOK = b.resolveAuthServer(r, obj)
	return refs, oidcOK && toolsOK && authzOK && extAuthOK && telemetryOK && webhooksOK && authServerOK
}

// NamesIn are the names of the configs of this kind that obj references,
// as the reference index reads them: a VirtualMCPServer can name several
// (one MCPToolConfig per aggregated workload, one MCPExternalAuthConfig
// per backend).
func (b *Base) NamesIn(index string, obj any) []string {
	if read, ok := b.row.Refs[index]; ok {
		return read(obj)
	}
	return nil
}

// ResolveAll resolves several references of this kind at once, in the
// order given, and reports them under the kind's one condition: the first
// that is missing or not valid makes the workload wait, named in the
// message; when all are usable the condition names them all. It returns
// the configs by name.
func (c *ConfigRefs[T]) ResolveAll(r *Report, namespace string, names []string) (map[string]T, bool) {
	if len(names) == 0 {
		r.Remove(c.Condition)
		return nil, true
	}
	out := make(map[string]T, len(names))
	for _, name := range names {
		cfg, err := c.Get(c.informer.Indexer(), namespace, name)
		ok, reason, message := c.check(name, cfg, err == nil)
		if !ok {
			r.SetFalse(c.Condition, reason, message)
			r.Unusable(c.Waiting, message)
			return nil, false
		}
		out[name] = cfg
	}
	r.Set(c.Condition, metav1.ConditionTrue, c.Valid, fmt.Sprintf("%s %s valid", c.Kind, quoteList(names)))
	return out, true
}

// quoteList is names quoted and joined with commas.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0] + " is"
	}
	return strings.Join(q, ", ") + " are"
}
