package workload

import (
	"context"
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// conflictRetry is how long a workload waits before looking again at a
// child another controller owns: the conflict is reported, not hot-looped,
// and no event announces its end.
const conflictRetry = time.Minute

// Spec describes a workload controller to NewBase.
type Spec struct {
	// Name names the queue, the writer and the metrics' controller label.
	Name string
	// Resource is the workload's resource, the label of its own writes.
	Resource string
	// Kind is the workload kind; children carry it in their owner
	// reference.
	Kind string
	// Primary is the workload kind's informer; it carries the reference
	// indexes (index.AddToInformers).
	Primary *framework.Informer
	// GroupMember: the kind joins MCPGroups through spec.groupRef, so a
	// group appearing or going away re-syncs its members.
	GroupMember bool
	// Sync is the controller's sync.
	Sync framework.SyncFunc
	// Phases are the kind's status.phase values for waiting and failure.
	Phases Phases
	// ForeignStatus, when set, reports a status-only update that changed
	// a part of the status another writer owns and the sync reads; such
	// an update re-syncs the workload (framework.PrimaryHandlerReading).
	ForeignStatus func(oldObj, newObj any) bool
}

// Phases are the status.phase values Report uses, and how the kind's
// Ready condition reads where ToolHive's operator reads it otherwise than
// hivekeeper's reasons.
type Phases struct {
	Pending, Failed string
	// ReadyReasons: Ready's reason is only ever "Ready" or "NotReady", as
	// ToolHive's operator writes it for MCPServer. hivekeeper's specific
	// reason still goes into the Warning event, the message and the
	// reference's own condition, where a reader finds the cause.
	ReadyReasons bool
	// RefFailed: a referenced config that is missing or not valid makes the
	// workload Failed with Ready=False "NotReady", as ToolHive's operator
	// reports it for MCPServer and MCPRemoteProxy (an alert on
	// phase=Failed fires on a typo in a reference). Without it the
	// workload waits: Pending, with the reference kind's Waiting reason.
	RefFailed bool
}

// Base is what every workload controller shares and embeds: its loop,
// writer, clock and recorder, its children, and the references it
// resolves (groups and config kinds). NewBase wires all of its event
// handlers.
type Base struct {
	*framework.Loop
	Writer    *framework.Writer
	Recorder  record.EventRecorder
	Clock     clock.PassiveClock
	Children  *Children
	Groups    thlisters.MCPGroupLister
	OIDC      *ConfigRefs[*thv1.MCPOIDCConfig]
	Tools     *ConfigRefs[*thv1.MCPToolConfig]
	Authz     *ConfigRefs[*thv1.MCPAuthzConfig]
	ExtAuth   *ConfigRefs[*thv1.MCPExternalAuthConfig]
	Telemetry *ConfigRefs[*thv1.MCPTelemetryConfig]
	Webhooks  *ConfigRefs[*thv1.MCPWebhookConfig]
	// AuthServer is spec.authServerRef (an MCPExternalAuthConfig too).
	AuthServer *ConfigRefs[*thv1.MCPExternalAuthConfig]
	// CompositeTools are a VirtualMCPServer's composite tool definitions.
	CompositeTools *ConfigRefs[*thv1.VirtualMCPCompositeToolDefinition]
	// AuthzFiles reads the authorization files of authzConfig type
	// configMap.
	AuthzFiles *AuthzFiles
	// Config is the Deps' own: pkg/app completes its UsageMetrics when a
	// standby replica becomes leader, before any sync.
	Config *framework.Config
	phases Phases
	// row is how the workload kind names what it references (the
	// reference index's readers), so resolution reads names the way the
	// index does.
	row      index.Workload
	primary  cache.Indexer
	resource string
	logKey   string
}

// NewBase builds the shared part of a workload controller and registers
// its event handlers: every event of the primary kind but its own status
// writes (a deletion also forgets the writer's memory of it); children
// mapped to their owner; the referenced configs mapped to exactly
// their referrers through the reference index; and, for group members,
// a group's creation or deletion to its members.
func NewBase(d *framework.Deps, s Spec) (*Base, error) {
	groups := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPGroups().Informer()
	})
	children, childInformers := NewChildren(d)
	b := &Base{
		Loop:           framework.NewLoop(s.Name, s.Sync),
		Writer:         d.NewWriter(s.Name),
		Recorder:       d.Recorder,
		Clock:          d.Clock,
		Children:       children,
		Groups:         thlisters.NewMCPGroupLister(groups.Indexer()),
		OIDC:           OIDCConfigs.Bind(d),
		Tools:          ToolConfigs.Bind(d),
		Authz:          AuthzConfigs.Bind(d),
		ExtAuth:        ExternalAuthConfigs.Bind(d),
		Telemetry:      TelemetryConfigs.Bind(d),
		Webhooks:       WebhookConfigs.Bind(d),
		AuthServer:     AuthServerConfigs.Bind(d),
		CompositeTools: CompositeToolDefinitions.Bind(d),
		Config:         &d.Config,
		phases:         s.Phases,
		resource:       s.Resource,
		logKey:         strings.ToLower(s.Kind),
	}
	if b.Clock == nil {
		b.Clock = clock.RealClock{}
	}
	primary := s.Primary
	if err := b.watchPrimary(primary, s.ForeignStatus); err != nil {
		return nil, err
	}
	owner := thv1.Kind(s.Kind)
	lookup := func(ns, name string) (types.UID, bool) { return uidOf(primary.Indexer(), ns, name) }
	for _, inf := range childInformers {
		synced, err := inf.AddEventHandler(framework.ChildHandler(owner, lookup, b.EnqueueKey))
		if err != nil {
			return nil, err
		}
		b.AddSynced(synced)
	}
	// A CA bundle ConfigMap an OIDC config names turns CABundleRefValidated
	// (OIDCCABundleCondition) of the workloads using that config.
	configMaps := d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ConfigMaps().Informer()
	})
	b.primary = primary.Indexer()
	synced, err := configMaps.AddEventHandler(b.CABundleHandler())
	if err != nil {
		return nil, err
	}
	b.AddSynced(synced)
	// An account the spec names re-syncs the workload when it appears,
	// goes, or changes owner: whether the workload may run as it depends
	// on its owner.
	if synced, err = d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ServiceAccounts().Informer()
	}).AddEventHandler(b.ServiceAccountHandler()); err != nil {
		return nil, err
	}
	b.AddSynced(synced)
	// An authorization file's ConfigMap re-syncs the workloads naming it.
	b.AuthzFiles = NewAuthzFiles(d.Kube, b.Children.ConfigMaps.Get)
	if synced, err = configMaps.AddEventHandler(b.AuthzFileHandler()); err != nil {
		return nil, err
	}
	b.AddSynced(synced)
	b.row, _ = index.WorkloadFor(s.Kind)
	row := b.row
	// A CA bundle ConfigMap of an embedded authorization server re-syncs
	// the workloads running that server: its content is in their pod
	// template's checksum.
	if synced, err = configMaps.AddEventHandler(b.AuthServerCAHandler()); err != nil {
		return nil, err
	}
	b.AddSynced(synced)
	for _, refs := range []interface {
		watchReferrers(row index.Workload, primary *framework.Informer, enqueue func(cache.ObjectName), loop *framework.Loop) error
	}{b.OIDC, b.Tools, b.Authz, b.ExtAuth, b.Telemetry, b.Webhooks, b.AuthServer, b.CompositeTools} {
		if err := refs.watchReferrers(row, primary, b.EnqueueKey, b.Loop); err != nil {
			return nil, err
		}
	}
	if s.GroupMember {
		synced, err := groups.AddEventHandler(MemberHandler(primary.Indexer(), b.EnqueueKey))
		if err != nil {
			return nil, err
		}
		b.AddSynced(synced)
	} else {
		b.AddSynced(groups.HasSynced)
	}
	return b, nil
}

// CABundleHandler is the ConfigMap handler that re-syncs the workloads
// whose OIDC config names the ConfigMap as CA bundle (OIDCCABundleHandler).
func (b *Base) CABundleHandler() cache.ResourceEventHandlerFuncs {
	return OIDCCABundleHandler(b.OIDC.informer.Indexer(), b.primary, b.EnqueueKey)
}

// ServiceAccountHandler is the ServiceAccount handler that re-syncs the
// workloads whose spec names the account for their pods
// (ServiceAccountHandler).
func (b *Base) ServiceAccountHandler() cache.ResourceEventHandlerFuncs {
	return ServiceAccountHandler(b.primary, b.EnqueueKey)
}

// AuthzFileHandler is the ConfigMap handler that re-syncs the workloads
// naming the ConfigMap as their authorization file (AuthzFiles.Handler).
func (b *Base) AuthzFileHandler() cache.ResourceEventHandlerFuncs {
	return b.AuthzFiles.Handler(b.primary, b.EnqueueKey)
}

// watchPrimary registers the workload kind's handler (PrimaryHandler):
// dropping its own status writes matters here, as a status field that
// follows something changing on every attempt would otherwise re-queue
// at once, bypassing the backoff.
func (b *Base) watchPrimary(primary *framework.Informer, foreign func(oldObj, newObj any) bool) error {
	synced, err := primary.AddEventHandler(framework.PrimaryHandlerReading(b.Loop, b.Writer, foreign))
	if err != nil {
		return err
	}
	b.AddSynced(synced)
	b.AddPrimary(primary.Indexer())
	return nil
}

// uidOf returns the UID of the cached object ns/name.
func uidOf(indexer cache.Indexer, ns, name string) (types.UID, bool) {
	obj, ok, err := indexer.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return "", false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetUID(), true
}

// Object is a workload as the controllers handle it.
type Object interface {
	runtime.Object
	metav1.Object
}

// StatusObject is a workload whose status the sync outline writes; the
// API types implement GetStatus.
type StatusObject[S any] interface {
	Object
	GetStatus() *S
}

// Sync is the outline of every workload sync, top to bottom like
// kube-controller-manager's syncDeployment:
//
//   - get the workload from its lister (get is a namespace lister's Get);
//     gone means nothing to do, garbage collection removes the children;
//     still the version this controller's last status write started
//     from means the informer is behind, and the sync waits for it
//     (Loop.DeferBehind);
//   - reconcile, with a context that logs the workload; it returns the
//     status to write (nil: none, as for a finalizer step) and how soon to
//     look again;
//   - one status write, nothing when the status did not change;
//   - the requeue reconcile asked for.
//
// A failed status write is an error of its own, retried with backoff
// together with reconcile's; NotFound means the workload was deleted
// meanwhile, and there is nothing left to do.
func Sync[T StatusObject[S], S any](ctx context.Context, b *Base, key cache.ObjectName,
	get func(name string) (T, error), patch framework.PatchFunc[T],
	reconcile func(context.Context, T) (*S, time.Duration, error),
) error {
	obj, err := get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if b.DeferBehind(b.Writer, key, obj) {
		return nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues(b.logKey, klog.KObj(obj)))
	status, requeueAfter, err := reconcile(ctx, obj)
	if status != nil {
		if _, perr := framework.PatchStatus(ctx, b.Writer, b.resource, obj, patch, obj.GetStatus(), status); perr != nil {
			if apierrors.IsNotFound(perr) {
				return nil
			}
			return errors.Join(err, perr)
		}
	}
	if requeueAfter > 0 {
		b.EnqueueAfter(key, requeueAfter)
	}
	return err
}

// Settle maps the outcome of building and writing a workload's children to
// its report, and says whether to look again:
//
//   - user input no child can be built from (InvalidSpecError) is a
//     condition and one Warning event, and is not retried: the next spec
//     change will be synced anyway;
//   - a child that another controller owns is a condition and one event,
//     looked at again in a minute;
//   - a write the API server refused is a condition that names the child
//     and the kind of refusal, an event carrying the API server's message,
//     and an error retried with backoff. The condition does not quote the
//     message: it can change on every attempt (a quota's current usage),
//     and a condition quoting it would be a new status write each time.
func (b *Base) Settle(ctx context.Context, r *Report, err error) (requeueAfter time.Duration, _ error) {
	var invalid *wiring.InvalidSpecError
	var conflict *framework.ChildConflictError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &invalid):
		// The condition that owns the problem (PodTemplateValid, a config
		// reference's) says so too, not only Ready.
		if invalid.Condition != "" && invalid.Condition != thv1.ConditionReady {
			r.Set(invalid.Condition, metav1.ConditionFalse, invalid.Reason, invalid.Message)
		}
		klog.FromContext(ctx).Info("Invalid spec, leaving the children untouched", "reason", invalid.Message)
		r.Fail(invalid.Reason, invalid.Message)
		return 0, nil
	case errors.As(err, &conflict):
		r.Fail(thv1.ReasonChildConflict, conflict.Error())
		return conflictRetry, nil
	case apierrors.IsConflict(err):
		// A child changed between the cache read and the patch (often
		// this controller's own previous write, not yet in the cache).
		// That is optimistic locking doing its job, not a failure: the
		// key is retried from a fresh read and the status says nothing.
		klog.FromContext(ctx).V(2).Info("A child changed since it was read, retrying", "err", err.Error())
		return 0, err
	}
	msg := framework.StableMessage(err)
	r.NotReady(b.phases.Failed, thv1.ReasonChildWriteFailed, msg)
	klog.FromContext(ctx).Info("Writing a child failed", "err", err.Error())
	r.event(thv1.ReasonChildWriteFailed, err.Error())
	return 0, err
}

// NewReport starts the report of one sync of obj, on the status being
// built: its conditions, phase and message.
func (b *Base) NewReport(obj Object, conditions *[]metav1.Condition, phase, message *string) *Report {
	return &Report{
		conditions: conditions, phase: phase, message: message,
		old: append([]metav1.Condition(nil), *conditions...),
		obj: obj, clock: b.Clock, recorder: b.Recorder, phases: b.phases,
	}
}

// Informer is the informer of a workload kind across d's scopes.
func Informer(d *framework.Deps, kind string) *framework.Informer {
	return d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return index.InformerFor(f, kind)
	})
}
