package main

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// tracker follows the MCPServers, Deployments and ConfigMaps of one
// namespace through watches, so that waiting for convergence costs the API
// server one watch event per change. Polling with lists instead cost O(N)
// per poll, which made the benchmark itself quadratic in N.
type tracker struct {
	mu sync.Mutex
	// phase holds each MCPServer's status.phase ("" before its first
	// status write).
	phase map[string]string
	// checksum holds each Deployment's RunConfig checksum annotation.
	checksum   map[string]string
	configMaps map[string]bool
	cancel     context.CancelFunc
}

func newTracker(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, ns string) *tracker {
	ctx, cancel := context.WithCancel(ctx)
	t := &tracker{phase: map[string]string{}, checksum: map[string]string{}, configMaps: map[string]bool{}, cancel: cancel}
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	kf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	t.handle(df.ForResource(serversGVR).Informer(), func(obj any, gone bool) {
		u := obj.(*unstructured.Unstructured)
		if gone {
			delete(t.phase, u.GetName())
			return
		}
		p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		t.phase[u.GetName()] = p
	})
	t.handle(kf.Apps().V1().Deployments().Informer(), func(obj any, gone bool) {
		d := obj.(*appsv1.Deployment)
		if gone {
			delete(t.checksum, d.Name)
			return
		}
		t.checksum[d.Name] = d.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
	})
	t.handle(kf.Core().V1().ConfigMaps().Informer(), func(obj any, gone bool) {
		cm := obj.(*corev1.ConfigMap)
		if cm.Name == "kube-root-ca.crt" {
			return
		}
		if gone {
			delete(t.configMaps, cm.Name)
		} else {
			t.configMaps[cm.Name] = true
		}
	})
	df.Start(ctx.Done())
	kf.Start(ctx.Done())
	df.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	return t
}

// handle registers f for every add, update and delete of inf.
func (t *tracker) handle(inf cache.SharedIndexInformer, f func(obj any, gone bool)) {
	locked := func(obj any, gone bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		f(obj, gone)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { locked(obj, false) },
		UpdateFunc: func(_, obj any) { locked(obj, false) },
		DeleteFunc: func(obj any) { locked(obj, true) },
	})
}

func (t *tracker) stop() { t.cancel() }

// children is how many Deployments and ConfigMaps exist.
func (t *tracker) children() (deployments, configMaps int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.checksum), len(t.configMaps)
}

// servers is how many MCPServers exist, how many have a phase, and how
// many are Ready (the phase hivekeeper and ToolHive's operator both write
// once a proxy pod is ready).
func (t *tracker) servers() (all, phased, ready int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.phase {
		if p != "" {
			phased++
		}
		if p == "Ready" {
			ready++
		}
	}
	return len(t.phase), phased, ready
}

// checksums copies the Deployments' RunConfig checksums.
func (t *tracker) checksums() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(t.checksum))
	for k, v := range t.checksum {
		out[k] = v
	}
	return out
}
