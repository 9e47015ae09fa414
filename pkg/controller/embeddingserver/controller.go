package embeddingserver

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of its metrics.
const Name = "embeddingserver"

// resource is the resource label of the writes to EmbeddingServers.
const resource = "embeddingservers"

// Controller converges EmbeddingServers.
type Controller struct {
	*framework.Loop

	toolhive     versioned.Interface
	servers      thlisters.EmbeddingServerLister
	statefulSets framework.ChildOps[*appsv1.StatefulSet]
	services     framework.ChildOps[*corev1.Service]
	writer       *framework.Writer
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	// pullSecrets are the operator-wide pull secrets of every pod.
	pullSecrets []corev1.LocalObjectReference
	// accounts are read only, to check the account a podTemplateSpec
	// names.
	accounts framework.ChildOps[*corev1.ServiceAccount]
}

// New builds the controller and registers its event handlers: its own
// kind, and its StatefulSets and Services (every change, status included:
// the StatefulSet's readiness is the server's phase).
func New(d *framework.Deps) (*Controller, error) {
	servers := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().EmbeddingServers().Informer()
	})
	stsInf, err := d.SelectedInformer(naming.EmbeddingServerSelector, func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Apps().V1().StatefulSets().Informer()
	})
	if err != nil {
		return nil, err
	}
	svcInf, err := d.SelectedInformer(naming.EmbeddingServerSelector, func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Services().Informer()
	})
	if err != nil {
		return nil, err
	}
	// Every ServiceAccount, as the workload controllers read them: an
	// account hivekeeper made for a workload is known by its owner.
	saInf := d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ServiceAccounts().Informer()
	})
	c := &Controller{
		toolhive:     d.Toolhive,
		servers:      thlisters.NewEmbeddingServerLister(servers.Indexer()),
		statefulSets: workload.StatefulSetOps(d, stsInf),
		services:     workload.ServiceOps(d, svcInf),
		accounts:     workload.ServiceAccountOps(d, saInf),
		writer:       d.NewWriter(Name),
		recorder:     d.Recorder,
		clock:        d.Clock,
		pullSecrets:  d.Config.PullSecrets,
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Loop = framework.NewLoop(Name, c.sync)
	c.AddSynced(saInf.HasSynced)
	c.AddPrimary(servers.Indexer())
	lookup := func(ns, name string) (types.UID, bool) {
		e, err := c.servers.EmbeddingServers(ns).Get(name)
		if err != nil {
			return "", false
		}
		return e.UID, true
	}
	children := framework.ChildHandler(thv1.Kind(thv1.KindEmbeddingServer), lookup, c.EnqueueKey)
	for _, h := range []struct {
		inf *framework.Informer
		h   cache.ResourceEventHandler
	}{
		{servers, framework.PrimaryHandler(c.Loop, c.writer)},
		{stsInf, children},
		{svcInf, children},
	} {
		synced, err := h.inf.AddEventHandler(h.h)
		if err != nil {
			return nil, fmt.Errorf("adding handler: %w", err)
		}
		c.AddSynced(synced)
	}
	// The account a podTemplateSpec names re-syncs the server when it
	// appears, goes or changes owner.
	if err := workload.WatchNamedServiceAccounts(d, servers.Indexer(), c.Loop); err != nil {
		return nil, fmt.Errorf("adding handler: %w", err)
	}
	return c, nil
}
