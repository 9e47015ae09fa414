package workload

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
)

// Recompute results, the result label of
// hivekeeper_referencing_workloads_recomputes_total.
const (
	recomputeChanged   = "changed"
	recomputeUnchanged = "unchanged"
	recomputeError     = "error"
)

// msgConfigValid is the message of a True Valid condition.
const msgConfigValid = "configuration is valid"

// maxNamedReferrers caps how many referrers a DeletionBlocked message names:
// a condition message is limited to 32768 bytes and a config shared by
// thousands of workloads would otherwise make the status patch fail.
const maxNamedReferrers = 20

// referrerSource is one workload kind that can reference the config, bound
// to its informer's indexer, so that a recompute walks the index table
// instead of naming kinds.
type referrerSource struct {
	row     index.Workload
	indexer cache.Indexer
}

// referringKinds are the table rows of the kinds that can reference a
// config through any of indexes, each once.
func referringKinds(indexes []string) []index.Workload {
	var rows []index.Workload
	for _, idx := range indexes {
		for _, w := range index.ReferencedBy(idx) {
			if !slices.ContainsFunc(rows, func(r index.Workload) bool { return r.Kind == w.Kind }) {
				rows = append(rows, w)
			}
		}
	}
	return rows
}

// ConfigController is the controller of one referenced config kind. It
// validates each config, publishes a hash of its spec for the workloads
// that use it, and is the only writer of status.referencingWorkloads, which
// it recomputes in full from the workload reference index on every sync.
// It holds a finalizer so that a config still in use cannot disappear from
// under its workloads; the last referrer's going releases it.
type ConfigController[T ConfigObject] struct {
	*framework.Loop

	kind      ConfigKind[T]
	client    versioned.Interface
	indexer   cache.Indexer
	referrers []referrerSource
	recorder  record.EventRecorder
	writer    *framework.Writer
	// clock stamps condition transition times; tests inject a fake one.
	clock clock.PassiveClock
	// fanIn is the base delay of a recompute woken by a referrer.
	fanIn time.Duration
	// release is the ToolHive release written, which some checks follow.
	release release.Release
}

// NewConfigController builds the controller of kind, named name, and
// registers its event handlers. The workload informers must carry the
// reference indexes (index.AddToInformers).
func NewConfigController[T ConfigObject](d *framework.Deps, name string, kind ConfigKind[T]) (*ConfigController[T], error) {
	configs := d.ToolhiveInformer(kind.Informer)
	c := &ConfigController[T]{
		kind:     kind,
		client:   d.Toolhive,
		indexer:  configs.Indexer(),
		recorder: d.Recorder,
		clock:    d.Clock,
		writer:   d.NewWriter(name),
		fanIn:    d.FanInWindow,
		release:  d.Config.Release,
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Loop = framework.NewLoop(name, c.sync)
	synced, err := configs.AddEventHandler(framework.PrimaryHandler(c.Loop, c.writer))
	if err != nil {
		return nil, err
	}
	c.AddSynced(synced)
	c.AddPrimary(configs.Indexer())
	for _, w := range referringKinds(kind.indexes()) {
		inf := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return index.InformerFor(f, w.Kind)
		})
		c.referrers = append(c.referrers, referrerSource{row: w, indexer: inf.Indexer()})
		synced, err := inf.AddEventHandler(c.referrerHandler(w.Kind))
		if err != nil {
			return nil, err
		}
		c.AddSynced(synced)
	}
	return c, nil
}

// referrerHandler enqueues the configs a workload of kind references before
// and after each change, so that moving from config A to B re-syncs both
// and a deleted workload (or its tombstone) re-syncs the one it used. It
// never lists: the references are read from the event objects through the
// index table. An update that keeps the same references is dropped,
// because a config's status depends only on who references it; otherwise
// every workload status write would wake its config.
//
// The config is enqueued after framework.FanInDelay, not at once: each
// recompute re-sends the whole referrer list, so a thousand workloads
// created (or deleted) together must cost a few status writes, not a
// thousand growing ones. Its own events are not delayed, and a config
// being deleted waits the base window only.
func (c *ConfigController[T]) referrerHandler(kind string) cache.ResourceEventHandlerFuncs {
	refs := func(obj any) []cache.ObjectName {
		m, ok := framework.MetaFromObj(obj)
		if !ok {
			return nil
		}
		var names []cache.ObjectName
		for _, idx := range c.kind.indexes() {
			for _, n := range index.ReferenceNames(kind, idx, m) {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		return names
	}
	enqueueOne := func(key cache.ObjectName) {
		listed := 0
		// A config being deleted waits one window only: its finalizer is
		// released once the last referrer is gone, and that must not wait
		// for the size of a list that is emptying.
		if cfg, err := c.kind.Get(c.indexer, key.Namespace, key.Name); err == nil && cfg.GetDeletionTimestamp() == nil {
			listed = int(cfg.GetStatus().ReferenceCount)
		}
		c.EnqueueCoalesced(key, framework.FanInDelay(c.fanIn, listed))
	}
	enqueue := func(obj any) {
		for _, key := range refs(obj) {
			enqueueOne(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			if framework.IsResync(oldObj, newObj) {
				return
			}
			before, after := refs(oldObj), refs(newObj)
			if slices.Equal(before, after) {
				return
			}
			for _, key := range before {
				enqueueOne(key)
			}
			for _, key := range after {
				enqueueOne(key)
			}
		},
		DeleteFunc: enqueue,
	}
}

// sync converges one config. It is level-triggered: the finalizer, the
// referrer list and the conditions are all derived from the lister and the
// reference index, whatever event woke it. At steady state it sends
// nothing. An invalid spec is reported and returns nil: retrying cannot
// fix it, the next spec change will.
func (c *ConfigController[T]) sync(ctx context.Context, key cache.ObjectName) error {
	ns := key.Namespace
	cached, err := c.kind.Get(c.indexer, ns, key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.DeferBehind(c.writer, key, cached) {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues(strings.ToLower(c.kind.Kind), klog.KObj(cached))
	ctx = klog.NewContext(ctx, logger)

	refs, err := c.referrersOf(key.String())
	if err != nil {
		metrics.ReferencingWorkloadsRecomputes.WithLabelValues(recomputeError).Inc()
		return err
	}
	if slices.Equal(refs, cached.GetStatus().ReferencingWorkloads) {
		metrics.ReferencingWorkloadsRecomputes.WithLabelValues(recomputeUnchanged).Inc()
	} else {
		metrics.ReferencingWorkloadsRecomputes.WithLabelValues(recomputeChanged).Inc()
	}

	patch := c.kind.Patch(c.client, ns)
	deleting := cached.GetDeletionTimestamp() != nil
	hasFinalizer := slices.Contains(cached.GetFinalizers(), c.kind.Finalizer)

	switch {
	case !deleting && !hasFinalizer:
		// Added before anything else so that a config cannot be deleted
		// between a workload starting to use it and this controller
		// noticing. The status patch below is not locked, so the new
		// resourceVersion does not matter to it.
		if _, err := framework.EnsureFinalizer(ctx, c.writer, c.kind.Resource, patch, cached, c.kind.Finalizer); err != nil {
			return err
		}
		hasFinalizer = true
	case deleting && hasFinalizer && len(refs) == 0:
		if _, err := framework.ReleaseFinalizer(ctx, c.writer, c.kind.Resource, patch, cached, c.kind.Finalizer, nil, nil, nil); err != nil {
			return err
		}
		logger.V(2).Info("Released finalizer, no workload references the config")
		if len(cached.GetFinalizers()) == 1 {
			// The API server removes the object now; a status patch
			// would only race it to a 404.
			return nil
		}
		hasFinalizer = false
	}
	blocked := deleting && hasFinalizer && len(refs) > 0

	status, problems, err := c.desiredStatus(cached, refs, blocked)
	if err != nil {
		return err
	}
	invalid := strings.Join(problems, "; ")
	// The typed comparison settles the steady state cheaply; computing a
	// merge patch of a status listing many workloads costs 20 times more.
	old := cached.GetStatus()
	var oldFull, desiredFull any = old, status
	if c.kind.FullStatus != nil {
		oldFull, desiredFull = c.kind.FullStatus(cached, status, problems)
	}
	if equality.Semantic.DeepEqual(oldFull, desiredFull) {
		c.writer.Skipped(c.kind.Resource + "/status")
	} else if _, err := framework.PatchStatus(ctx, c.writer, c.kind.Resource, cached, patch, oldFull, desiredFull); err != nil {
		return err
	}

	// Events follow a successful write, so a retried sync cannot emit the
	// same transition twice; they fire only when the condition turns.
	// The reasons are ToolHive's events': ConfigInvalid, ConfigValid on
	// recovery from a False Valid, DeletionBlocked.
	if invalid != "" && !meta.IsStatusConditionFalse(old.Conditions, thv1.ConditionValid) {
		c.recorder.Event(cached, corev1.EventTypeWarning, thv1.ReasonConfigInvalid, invalid)
	}
	if invalid == "" && meta.IsStatusConditionFalse(old.Conditions, thv1.ConditionValid) {
		c.recorder.Event(cached, corev1.EventTypeNormal, thv1.ReasonConfigValid, "spec validation passed")
	}
	if c.kind.Advisories != nil {
		for _, a := range c.kind.Advisories(cached) {
			if a.Event != "" && a.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(old.Conditions, a.Type) {
				c.recorder.Event(cached, corev1.EventTypeWarning, a.Event, a.EventMessage)
			}
		}
	}
	if blocked && !meta.IsStatusConditionTrue(old.Conditions, thv1.ConditionDeletionBlocked) {
		c.recorder.Event(cached, corev1.EventTypeWarning, thv1.ReasonDeletionBlocked, "Deletion blocked: "+blockedMessage(refs))
	}
	if invalid != "" {
		logger.V(2).Info("Config is invalid", "reason", invalid)
	}
	return nil
}

// desiredStatus builds the new status from the one as read, so that
// conditions written by others survive the merge patch (which replaces the
// whole conditions array). problems are the validation problems, none when
// the spec is valid.
//
// DeletionBlocked exists only while a deletion is actually blocked: it is
// removed otherwise, including while referrers exist but nobody is
// deleting the config, so that a config in normal use carries no condition
// that suggests a deletion.
func (c *ConfigController[T]) desiredStatus(cached T, refs []thv1.WorkloadReference, blocked bool) (*thv1.ConfigStatus, []string, error) {
	status := cached.GetStatus().DeepCopy()
	gen := cached.GetGeneration()

	hash, err := configHash(c.kind.Spec(cached))
	if err != nil {
		return nil, nil, err
	}
	status.ObservedGeneration = gen
	status.ConfigHash = hash
	status.ReferencingWorkloads = refs
	status.ReferenceCount = int32(len(refs))

	errs := c.kind.Validate(cached)
	if c.kind.ReleaseChecks != nil {
		errs = append(errs, c.kind.ReleaseChecks(cached, c.release)...)
	}
	validReason, invalidReason := c.kind.ValidReason, c.kind.InvalidReason
	if validReason == "" {
		validReason, invalidReason = thv1.ReasonConfigValid, thv1.ReasonConfigInvalid
	}
	// A valid spec may still be one this build refuses (ToolHive's order:
	// the spec's problems first).
	if c.kind.Refuse != nil && len(errs) == 0 {
		if reason, message := c.kind.Refuse(cached); reason != "" {
			invalidReason, errs = reason, []string{message}
		}
	}
	if len(errs) > 0 {
		framework.SetCondition(&status.Conditions, c.clock, gen, thv1.ConditionValid, metav1.ConditionFalse, invalidReason, strings.Join(errs, "; "))
	} else {
		framework.SetCondition(&status.Conditions, c.clock, gen, thv1.ConditionValid, metav1.ConditionTrue, validReason, msgConfigValid)
	}
	if c.kind.Advisories != nil {
		for _, a := range c.kind.Advisories(cached) {
			if a.Remove {
				meta.RemoveStatusCondition(&status.Conditions, a.Type)
			} else {
				framework.SetCondition(&status.Conditions, c.clock, gen, a.Type, a.Status, a.Reason, a.Message)
			}
		}
	}
	if blocked {
		framework.SetCondition(&status.Conditions, c.clock, gen, thv1.ConditionDeletionBlocked, metav1.ConditionTrue, thv1.ReasonReferencedByWorkloads, blockedMessage(refs))
	} else {
		meta.RemoveStatusCondition(&status.Conditions, thv1.ConditionDeletionBlocked)
	}
	return status, errs, nil
}

// configHash is the hex SHA-256 of the spec's JSON encoding. encoding/json
// writes struct fields in declaration order and map keys sorted, so the
// encoding is canonical: the hash changes exactly when a modelled spec
// field does.
func configHash(spec any) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// referrersOf recomputes, in full, the workloads that reference the config
// key ("<ns>/<name>") from the reference index of every workload kind,
// sorted by kind then name. It costs O(referrers), never O(namespace). An
// empty result is nil so that it encodes like an unset status field.
func (c *ConfigController[T]) referrersOf(key string) ([]thv1.WorkloadReference, error) {
	var refs []thv1.WorkloadReference
	for _, w := range c.referrers {
		for _, idx := range c.kind.indexes() {
			if _, ok := w.row.Refs[idx]; !ok {
				continue
			}
			names, err := index.Referrers(w.indexer, idx, key)
			if err != nil {
				return nil, fmt.Errorf("reading %s referrers of %s: %w", w.row.Kind, key, err)
			}
			for _, n := range names {
				refs = append(refs, thv1.WorkloadReference{Kind: w.row.Kind, Name: n})
			}
		}
	}
	slices.SortFunc(refs, func(a, b thv1.WorkloadReference) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	// A workload naming the config through two references is one referrer.
	return slices.Compact(refs), nil
}

// blockedMessage names the referrers that hold a deletion.
func blockedMessage(refs []thv1.WorkloadReference) string {
	return "referenced by " + referrerList(refs)
}

// referrerList renders referrers as "Kind/name, Kind/name", naming at most
// maxNamedReferrers of them.
func referrerList(refs []thv1.WorkloadReference) string {
	var b strings.Builder
	for i, r := range refs {
		if i == maxNamedReferrers {
			fmt.Fprintf(&b, " and %d more", len(refs)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.Kind + "/" + r.Name)
	}
	return b.String()
}
