// Package virtualmcpserver is the VirtualMCPServer controller: it runs the
// vMCP that aggregates the MCPServers, MCPRemoteProxies and
// MCPServerEntries of one MCPGroup
// behind a single endpoint (configuration ConfigMap listing the backends,
// ServiceAccount, Deployment and Service), keeps the backend list in step
// with the group's membership, and reports status.
//
// config.yaml and the children are built by pkg/toolhive/render/vmcp as
// ToolHive's operator builds them, from spec.config, the configs the
// server references (MCPAuthzConfig, MCPTelemetryConfig, an MCPToolConfig
// per workload, an MCPExternalAuthConfig per backend) and the group's
// members, which this controller resolves from its listers; a change of
// any of them reaches the server through the reference index and rolls it
// once.
//
// The volumes hivekeeper builds are resolved once per sync and their drift
// is detected through the toolhive.stacklok.io/podvolumes-hash annotation,
// what spec.podTemplateSpec merges into the pod through
// toolhive.stacklok.io/podtemplatespec-hash, never by comparing the live,
// API-server-defaulted values (see wiring.PodVolumes and
// wiring.ApplyPodTemplate in pkg/toolhive/wiring).
//
// sync.go is the only file that writes.
package virtualmcpserver

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/vmcp"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue and its metrics label.
const Name = "virtualmcpserver"

// byAggregatedGroup indexes VirtualMCPServers by "<ns>/<group>" of the
// MCPGroup they aggregate. It is not index.ByGroup on purpose: that index
// means membership, and a VirtualMCPServer is not a member of the group it
// aggregates.
const byAggregatedGroup = "virtualmcpserver.toolhive.stacklok.dev/aggregated-group"

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
	*workload.Base

	toolhive versioned.Interface
	// kube creates the session HMAC key's Secret.
	kube    kubernetes.Interface
	servers thlisters.VirtualMCPServerLister
	// serverIndex carries ByAggregatedGroup; members is the MCPServer
	// indexer, whose index.ByGroup index lists a group's backends without
	// listing the namespace.
	serverIndex cache.Indexer
	members     []memberKind
	// memberAuth reads the MCPExternalAuthConfigs members name in their
	// own externalAuthConfigRef.
	memberAuth thlisters.MCPExternalAuthConfigLister
	// embeddings reads the EmbeddingServers of spec.embeddingServerRef.
	embeddings thlisters.EmbeddingServerLister
	// pods are the vMCPs' pods, whose failures the phase reports.
	pods *workload.ProxyPods
}

// memberKind is one backend kind of a group: its kind name and the
// indexer whose index.ByGroup index lists a group's members of that kind.
type memberKind struct {
	kind    string
	indexer cache.Indexer
}

// backendKinds are the kinds whose group members become backends, in the
// order a name taken twice is resolved (see backendsOf).
var backendKinds = []string{thv1.KindMCPServer, thv1.KindMCPRemoteProxy, thv1.KindMCPServerEntry}

// New builds the controller and registers its event handlers. The
// byAggregatedGroup index is added here, before the informers start.
func New(d *framework.Deps) (*Controller, error) {
	vmcps := workload.Informer(d, thv1.KindVirtualMCPServer)
	groups := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPGroups().Informer()
	})
	if err := vmcps.AddIndexers(cache.Indexers{byAggregatedGroup: aggregatedGroup}); err != nil {
		return nil, fmt.Errorf("adding the %s index: %w", byAggregatedGroup, err)
	}
	c := &Controller{
		toolhive:    d.Toolhive,
		kube:        d.Kube,
		servers:     thlisters.NewVirtualMCPServerLister(vmcps.Indexer()),
		serverIndex: vmcps.Indexer(),
	}
	var err error
	if c.Base, err = workload.NewBase(d, workload.Spec{Name: Name, Resource: "virtualmcpservers", Kind: thv1.KindVirtualMCPServer,
		Primary: vmcps, Sync: c.sync,
		Phases:        workload.Phases{Pending: thv1.VirtualMCPServerPhasePending, Failed: thv1.VirtualMCPServerPhaseFailed},
		ForeignStatus: runtimeChanged}); err != nil {
		return nil, err
	}
	// Built volumes are compared through their hash annotation, and what
	// only spec.podTemplateSpec sets through the template's; each is pruned
	// once nothing is left to hash.
	c.Children.Deployments = workload.WithPodTemplateSpecAndVolumesHash(c.Children.Deployments)
	// A group appearing or going away flips GroupRefValidated.
	groupsSynced, err := groups.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueAggregators,
		DeleteFunc: c.enqueueAggregators,
	})
	if err != nil {
		return nil, err
	}
	c.AddSynced(groupsSynced)
	for _, kind := range backendKinds {
		members := workload.Informer(d, kind)
		synced, err := members.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.memberChanged,
			UpdateFunc: c.memberUpdated,
			DeleteFunc: c.memberChanged,
		})
		if err != nil {
			return nil, err
		}
		c.AddSynced(synced)
		c.members = append(c.members, memberKind{kind: kind, indexer: members.Indexer()})
	}
	if err := c.watchMemberAuth(d); err != nil {
		return nil, err
	}
	if err := c.watchEmbeddingServers(d); err != nil {
		return nil, err
	}
	// A pod failing or turning ready can change the phase before the
	// Deployment's status says anything (deploymentPhase).
	if c.pods, err = workload.WatchProxyPods(d, c.Loop, naming.AppVirtualMCPServer); err != nil {
		return nil, err
	}
	return c, nil
}

// watchEmbeddingServers re-syncs the servers naming an EmbeddingServer in
// spec.embeddingServerRef (index.ByEmbeddingServer: O(referrers)) when it
// appears, goes away, or changes what they read of it (embeddingView):
// its readiness comes from its StatefulSet through its own controller, so
// nothing is polled, and its other status writes enqueue nothing.
func (c *Controller) watchEmbeddingServers(d *framework.Deps) error {
	servers := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().EmbeddingServers().Informer()
	})
	c.embeddings = thlisters.NewEmbeddingServerLister(servers.Indexer())
	synced, err := servers.AddEventHandler(c.embeddingHandler())
	if err != nil {
		return err
	}
	c.AddSynced(synced)
	return nil
}

// embeddingHandler enqueues the referrers of an EmbeddingServer that was
// added or deleted, or whose embeddingView changed.
func (c *Controller) embeddingHandler() cache.ResourceEventHandlerFuncs {
	referrers := func(obj any) {
		if m, ok := framework.MetaFromObj(obj); ok {
			c.enqueueByIndex(index.ByEmbeddingServer, m.GetNamespace(), index.Key(m.GetNamespace(), m.GetName()))
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    referrers,
		DeleteFunc: referrers,
		UpdateFunc: func(oldObj, newObj any) {
			if viewEmbedding(oldObj) != viewEmbedding(newObj) {
				referrers(newObj)
			}
		},
	}
}

// embeddingView is what a vMCP reads of an EmbeddingServer.
type embeddingView struct {
	ready, failed bool
	url           string
}

func viewEmbedding(obj any) embeddingView {
	e, ok := obj.(*thv1.EmbeddingServer)
	if !ok {
		return embeddingView{}
	}
	return embeddingView{ready: embeddingReady(e), failed: e.Status.Phase == thv1.EmbeddingServerPhaseFailed, url: e.Status.URL}
}

// watchMemberAuth re-syncs the servers aggregating a member whose own
// MCPExternalAuthConfig appeared, went away or changed in a way that
// matters (workload.ExternalAuthConfigs.ChangeMatters): its strategy is
// in config.yaml, not in anything of the member. The members are found
// through their index.ByExternalAuthConfig index, their servers through
// byAggregatedGroup: O(referrers). Configs the server names itself are
// watched by workload.Base.
func (c *Controller) watchMemberAuth(d *framework.Deps) error {
	configs := d.ToolhiveInformer(workload.ExternalAuthConfigs.Informer)
	c.memberAuth = thlisters.NewMCPExternalAuthConfigLister(configs.Indexer())
	synced, err := configs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.memberAuthChanged,
		UpdateFunc: func(oldObj, newObj any) {
			if workload.ExternalAuthConfigs.ChangeMatters(oldObj, newObj) {
				c.memberAuthChanged(newObj)
			}
		},
		DeleteFunc: c.memberAuthChanged,
	})
	if err != nil {
		return err
	}
	c.AddSynced(synced)
	return nil
}

// memberAuthChanged enqueues the aggregators of every member that names
// the MCPExternalAuthConfig obj (or its tombstone).
func (c *Controller) memberAuthChanged(obj any) {
	m, ok := framework.MetaFromObj(obj)
	if !ok {
		return
	}
	key := index.Key(m.GetNamespace(), m.GetName())
	for _, kind := range c.members {
		referrers, err := kind.indexer.ByIndex(index.ByExternalAuthConfig, key)
		if err != nil {
			continue
		}
		for _, r := range referrers {
			c.memberChanged(r)
		}
	}
}

// enqueueByIndex enqueues every VirtualMCPServer whose index indexName has
// value key: O(referrers), no namespace is listed.
func (c *Controller) enqueueByIndex(indexName, namespace, key string) {
	names, err := index.Referrers(c.serverIndex, indexName, key)
	if err != nil {
		return
	}
	for _, n := range names {
		c.EnqueueKey(cache.NewObjectName(namespace, n))
	}
}

// enqueueAggregators enqueues the servers that aggregate the MCPGroup obj.
func (c *Controller) enqueueAggregators(obj any) {
	if m, ok := framework.MetaFromObj(obj); ok {
		c.enqueueByIndex(byAggregatedGroup, m.GetNamespace(), index.Key(m.GetNamespace(), m.GetName()))
	}
}

// memberChanged re-syncs the servers aggregating the group of a member
// that was added or deleted (tombstones included).
func (c *Controller) memberChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	for _, key := range memberGroups(obj) {
		ns, _, _ := cache.SplitMetaNamespaceKey(key)
		c.enqueueByIndex(byAggregatedGroup, ns, key)
	}
}

// memberUpdated re-syncs the aggregators of the old and the new group, but
// only when the member's backend entry changed (group, URL, transport,
// deletion): members write their status often, and none of that reaches
// config.yaml.
func (c *Controller) memberUpdated(oldObj, newObj any) {
	if slices.Equal(memberGroups(oldObj), memberGroups(newObj)) && vmcp.ViewMember(oldObj) == vmcp.ViewMember(newObj) {
		return
	}
	c.memberChanged(oldObj)
	c.memberChanged(newObj)
}

// memberGroups are the "<ns>/<group>" keys of the group a member of any
// backend kind belongs to (none or one).
func memberGroups(obj any) []string {
	for _, kind := range backendKinds {
		if keys := index.References(kind, index.ByGroup, obj); keys != nil {
			return keys
		}
	}
	return nil
}

// runtimeChanged reports an update that changed status.runtime, which
// vmcp writes: the backends' health it reports is projected and turns the
// phase (projectRuntime, backendHealth), so it re-syncs the server.
func runtimeChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*thv1.VirtualMCPServer)
	n, ok2 := newObj.(*thv1.VirtualMCPServer)
	return ok1 && ok2 && !equality.Semantic.DeepEqual(o.Status.Runtime, n.Status.Runtime)
}
