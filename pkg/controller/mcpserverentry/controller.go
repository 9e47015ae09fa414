// Package mcpserverentry is the MCPServerEntry controller. An entry runs
// nothing: it declares a remote MCP server as a member of a group, for the
// group's VirtualMCPServers to reach directly. The controller checks what
// ToolHive's operator checks — the remote URL (the same gate as a remote
// proxy's), the group (exists and Ready), the MCPExternalAuthConfig it
// names (exists), the CA bundle ConfigMap it names (exists, read from the
// ConfigMap cache with workload.LookupCABundle) — and writes the phase
// (Valid or Failed) and one condition per check; the status is its only
// write.
//
// One of ToolHive's checks is not made: the header Secrets (hivekeeper
// cannot read Secrets) are not reported, and do not fail the entry; the
// vMCP that reads them finds out.
//
// Membership (MCPGroup.status.entries) and the MCPExternalAuthConfig's
// referrers come from the reference index (index.ByGroup,
// index.ByExternalAuthConfig), like a workload's.
package mcpserverentry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kubeinformers "k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcpserverentry"

// resource is the resource label of the controller's writes.
const resource = "mcpserverentries"

// Controller converges the status of MCPServerEntries.
type Controller struct {
	*framework.Loop

	client   versioned.Interface
	entries  thlisters.MCPServerEntryLister
	indexer  cache.Indexer
	groups   thlisters.MCPGroupLister
	authCfgs cache.Indexer
	// configMaps reads the CA bundle ConfigMaps: every ConfigMap of the
	// namespace, a user's as metadata and keys (framework.TrimForeign).
	configMaps corelisters.ConfigMapLister
	writer     *framework.Writer
	recorder   record.EventRecorder
	clock      clock.PassiveClock
}

// New builds the controller and registers its event handlers. The entry
// informer must carry the reference indexes (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	entries := workload.Informer(d, thv1.KindMCPServerEntry)
	groups := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPGroups().Informer()
	})
	authCfgs := d.ToolhiveInformer(workload.ExternalAuthConfigs.Informer)
	configMaps := d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ConfigMaps().Informer()
	})
	c := &Controller{
		client:     d.Toolhive,
		entries:    thlisters.NewMCPServerEntryLister(entries.Indexer()),
		indexer:    entries.Indexer(),
		groups:     thlisters.NewMCPGroupLister(groups.Indexer()),
		authCfgs:   authCfgs.Indexer(),
		configMaps: corelisters.NewConfigMapLister(configMaps.Indexer()),
		writer:     d.NewWriter(Name),
		recorder:   d.Recorder,
		clock:      d.Clock,
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Loop = framework.NewLoop(Name, c.sync)
	c.AddPrimary(entries.Indexer())
	for _, h := range []struct {
		inf *framework.Informer
		h   cache.ResourceEventHandler
	}{
		{entries, framework.PrimaryHandler(c.Loop, c.writer)},
		{groups, c.groupsHandler()},
		{authCfgs, c.authHandler()},
		{configMaps, c.caBundleHandler()},
	} {
		synced, err := h.inf.AddEventHandler(h.h)
		if err != nil {
			return nil, fmt.Errorf("adding handler: %w", err)
		}
		c.AddSynced(synced)
	}
	return c, nil
}

// referrers enqueues the entries whose index indexName names obj: O(entries
// that name it), no namespace is listed.
func (c *Controller) referrers(indexName string) func(obj any) {
	return func(obj any) { workload.EnqueueReferrers(c.indexer, indexName, obj, c.EnqueueKey) }
}

// groupsHandler re-syncs the entries of a group that appears, goes away,
// starts being deleted or changes phase (an entry needs its group Ready);
// the group's status writes of its member lists do not matter to an
// entry.
func (c *Controller) groupsHandler() cache.ResourceEventHandlerFuncs {
	enqueue := c.referrers(index.ByGroup)
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		DeleteFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*thv1.MCPGroup)
			n, ok2 := newObj.(*thv1.MCPGroup)
			if ok1 && ok2 && (o.Status.Phase != n.Status.Phase || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)) {
				enqueue(newObj)
			}
		},
	}
}

// authHandler re-syncs the entries of an MCPExternalAuthConfig that
// appears or goes away: existence is all an entry checks of it.
func (c *Controller) authHandler() cache.ResourceEventHandlerFuncs {
	enqueue := c.referrers(index.ByExternalAuthConfig)
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, DeleteFunc: enqueue}
}

// caBundleHandler re-syncs the entries of the namespace whose CA bundle
// reference names a ConfigMap that appears, goes away or changes its
// keys; other ConfigMap events enqueue nothing.
func (c *Controller) caBundleHandler() cache.ResourceEventHandlerFuncs {
	return workload.CABundleHandler(func(namespace, name string) {
		inNamespace, err := c.indexer.ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return
		}
		for _, o := range inNamespace {
			if e, ok := o.(*thv1.MCPServerEntry); ok && caBundleName(e) == name {
				c.EnqueueKey(cache.MetaObjectToName(e))
			}
		}
	})
}

// configMap reads a namespace's ConfigMap from the cache.
func (c *Controller) configMap(namespace, name string) (*corev1.ConfigMap, error) {
	return c.configMaps.ConfigMaps(namespace).Get(name)
}
