// Package virtualmcpserver is the VirtualMCPServer controller: it runs the
// vMCP that aggregates the MCPServers of one MCPGroup behind a single
// endpoint (configuration ConfigMap listing the backends, ServiceAccount,
// Deployment and Service), keeps the backend list in step with the group's
// membership, and reports status.
//
// Pod volumes are resolved once per sync and drift is detected through the
// toolhive.stacklok.io/podvolumes-hash annotation, never by comparing the
// live volume list (see workload.PodVolumes).
//
// build.go and the comparators in pkg/workload are pure; sync.go is the
// only file that writes.
package virtualmcpserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue and its metrics label.
const Name = "virtualmcpserver"

// resource is the metrics label of the custom resource.
const resource = "virtualmcpservers"

// ByAggregatedGroup indexes VirtualMCPServers by "<ns>/<group>" of the
// MCPGroup they aggregate. It is not index.ByGroup on purpose: that index
// means membership, and a VirtualMCPServer is not a member of the group it
// aggregates.
const ByAggregatedGroup = "virtualmcpserver.toolhive.stacklok.dev/aggregated-group"

// aggregatedGroup is the index function of ByAggregatedGroup.
func aggregatedGroup(obj any) ([]string, error) {
	v, ok := obj.(*thv1.VirtualMCPServer)
	if !ok || v.Spec.GroupRef.Name == "" {
		return nil, nil
	}
	return []string{index.Key(v.Namespace, v.Spec.GroupRef.Name)}, nil
}

// Controller converges VirtualMCPServers.
type Controller struct {
	*controller.Loop

	toolhive versioned.Interface
	writer   *controller.Writer
	recorder record.EventRecorder
	clock    clock.PassiveClock

	servers     thlisters.VirtualMCPServerLister
	serverIndex cache.Indexer
	// members is the MCPServer indexer; its index.ByGroup index lists a
	// group's backends without listing the namespace.
	members     cache.Indexer
	oidcConfigs thlisters.MCPOIDCConfigLister
	groups      thlisters.MCPGroupLister
	children    *workload.Children

	image string
}

// New builds the controller from the shared informer factories and
// registers its event handlers. The workload informers must carry the
// reference indexes (index.AddToInformers); the ByAggregatedGroup index is
// added here, before the informers start.
func New(d *app.Deps) (*Controller, error) {
	th := d.ToolhiveInformers.Toolhive().V1beta1()
	vmcps := th.VirtualMCPServers()
	members := th.MCPServers()
	oidc := th.MCPOIDCConfigs()
	groups := th.MCPGroups()
	children, childInformers := workload.NewChildren(d.Kube, d.KubeInformers)
	// Volumes are compared through their hash annotation, which is pruned
	// once nothing is left to hash.
	children.Deployments = workload.WithPodVolumesHash(children.Deployments)

	if _, ok := vmcps.Informer().GetIndexer().GetIndexers()[ByAggregatedGroup]; !ok {
		if err := vmcps.Informer().AddIndexers(cache.Indexers{ByAggregatedGroup: aggregatedGroup}); err != nil {
			return nil, fmt.Errorf("adding the %s index: %w", ByAggregatedGroup, err)
		}
	}

	c := &Controller{
		toolhive:    d.Toolhive,
		writer:      controller.NewWriter(Name),
		recorder:    d.Recorder,
		clock:       clock.RealClock{},
		servers:     vmcps.Lister(),
		serverIndex: vmcps.Informer().GetIndexer(),
		members:     members.Informer().GetIndexer(),
		oidcConfigs: oidc.Lister(),
		groups:      groups.Lister(),
		children:    children,
		image:       d.Options.VMCPImage,
	}
	wiring := workload.Wiring{
		Primary: vmcps.Informer(),
		Owner:   thv1.Kind(thv1.KindVirtualMCPServer),
		Lookup: func(ns, name string) (types.UID, bool) {
			v, err := c.servers.VirtualMCPServers(ns).Get(name)
			if err != nil {
				return "", false
			}
			return v.UID, true
		},
		Children:    childInformers,
		OIDCConfigs: oidc.Informer(),
	}
	c.Loop = controller.NewLoop(Name+d.QueueSuffix, c.sync, wiring.Synced(members.Informer(), groups.Informer())...)
	if err := wiring.Register(c.Loop); err != nil {
		return nil, err
	}
	// A group appearing or going away flips GroupRefValidated.
	if _, err := groups.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueAggregators,
		DeleteFunc: c.enqueueAggregators,
	}); err != nil {
		return nil, err
	}
	if _, err := members.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.memberChanged,
		UpdateFunc: c.memberUpdated,
		DeleteFunc: c.memberChanged,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueueByIndex enqueues every VirtualMCPServer whose index indexName has
// value key: O(referrers), no namespace is listed.
func (c *Controller) enqueueByIndex(indexName, namespace, key string) {
	names, err := index.Referrers(c.serverIndex, indexName, key)
	if err != nil {
		return
	}
	for _, n := range names {
		c.EnqueueKey(index.Key(namespace, n))
	}
}

// enqueueAggregators enqueues the servers that aggregate the MCPGroup obj.
func (c *Controller) enqueueAggregators(obj any) {
	if m, ok := controller.MetaFromObj(obj); ok {
		c.enqueueByIndex(ByAggregatedGroup, m.GetNamespace(), index.Key(m.GetNamespace(), m.GetName()))
	}
}

// memberChanged re-syncs the servers aggregating the group of an MCPServer
// that was added or deleted (tombstones included).
func (c *Controller) memberChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	for _, key := range index.References(thv1.KindMCPServer, index.ByGroup, obj) {
		ns, _, _ := cache.SplitMetaNamespaceKey(key)
		c.enqueueByIndex(ByAggregatedGroup, ns, key)
	}
}

// memberUpdated re-syncs the aggregators of the old and the new group, but
// only when the MCPServer's backend entry changed (group, address,
// transport, deletion): MCPServers write their status often, and none of
// that reaches config.yaml.
func (c *Controller) memberUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*thv1.MCPServer)
	n, ok2 := newObj.(*thv1.MCPServer)
	if !ok1 || !ok2 || backendView(o) == backendView(n) {
		return
	}
	c.memberChanged(oldObj)
	c.memberChanged(newObj)
}

// backendEntry is what of an MCPServer a vMCP configuration depends on.
type backendEntry struct {
	group, url, transport string
	deleting              bool
}

// backendView projects an MCPServer onto its backendEntry.
func backendView(s *thv1.MCPServer) backendEntry {
	e := backendEntry{url: BackendURL(s), transport: mcpserver.EffectiveProxyMode(s), deleting: s.DeletionTimestamp != nil}
	if s.Spec.GroupRef != nil {
		e.group = s.Spec.GroupRef.Name
	}
	return e
}

// Register is the constructor pkg/app/controllers registers.
func Register(d *app.Deps) (app.Runnable, error) {
	c, err := New(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return c, nil
}
