package workload

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// ProxyPods is what a workload controller reads of its proxy pods: the
// pods of the proxy Deployments (naming.ProxyPodSelector), cached trimmed
// to their containers' states (framework.TrimPod), so that its status can
// say a pod failed, as ToolHive v0.63.0's operator says it.
type ProxyPods struct {
	app     string
	pods    cache.Indexer
	handler cache.ResourceEventHandlerFuncs
}

// WatchProxyPods caches the proxy pods and re-syncs, through l, the
// workload of kind app (naming.AppMCPServer, naming.AppMCPRemoteProxy) a
// pod belongs to when the pod appears, goes away, or changes what its
// status reads of it (viewPod): a pod's other status writes, such as its
// conditions' probe times, enqueue nothing. Both workload kinds share one
// informer.
func WatchProxyPods(d *framework.Deps, l *framework.Loop, app string) (*ProxyPods, error) {
	inf, err := d.SelectedInformer(naming.ProxyPodSelector, func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	})
	if err != nil {
		return nil, err
	}
	enqueue := func(obj any) {
		if m, ok := framework.MetaFromObj(obj); ok && m.GetLabels()[naming.LabelName] == app {
			if name := m.GetLabels()[naming.LabelInstance]; name != "" {
				l.EnqueueKey(cache.NewObjectName(m.GetNamespace(), name))
			}
		}
	}
	p := &ProxyPods{app: app, pods: inf.Indexer(), handler: cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		DeleteFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			if viewPod(oldObj) != viewPod(newObj) {
				enqueue(newObj)
			}
		},
	}}
	synced, err := inf.AddEventHandler(p.handler)
	if err != nil {
		return nil, err
	}
	l.AddSynced(synced)
	return p, nil
}

// Handler is the event handler WatchProxyPods registered (tests drive it
// with events).
func (p *ProxyPods) Handler() cache.ResourceEventHandler { return p.handler }

// Of returns the cached pods of the workload name in namespace, selected
// as ToolHive's operator selects them: by all of its proxy's labels, and
// counted as it counts them: a pod being deleted is left out.
func (p *ProxyPods) Of(namespace, name string) []*corev1.Pod {
	objs, err := p.pods.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil
	}
	want := labels.SelectorFromSet(naming.Labels(p.app, name))
	var out []*corev1.Pod
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && pod.DeletionTimestamp == nil && want.Matches(labels.Set(pod.Labels)) {
			out = append(out, pod)
		}
	}
	return out
}

// podView is what a workload's status reads of one of its pods.
type podView struct {
	labels  string
	failure string
}

func viewPod(obj any) podView {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return podView{}
	}
	return podView{labels: labels.Set(pod.Labels).String(), failure: PodFailure(pod)}
}

// failedWaitingReasons are the container waiting reasons ToolHive v0.63.0
// counts as a failed pod; the others, such as ImagePullBackOff, it
// counts as pending, since the kubelet retries them and they may pass.
var failedWaitingReasons = []string{"CrashLoopBackOff", "CreateContainerError", "InvalidImageName"}

// PodFailure is why a proxy pod failed, as ToolHive v0.63.0's operator
// classifies it: a container waiting for one of failedWaitingReasons, a
// container that exited non-zero (ContainerTerminated), or a pod in phase
// Failed (PodFailed); "" for a pod that has not failed, or is being
// deleted (it is not counted at all).
func PodFailure(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return ""
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && slices.Contains(failedWaitingReasons, w.Reason) {
			return w.Reason
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return "ContainerTerminated"
		}
	}
	if pod.Status.Phase == corev1.PodFailed {
		return "PodFailed"
	}
	return ""
}
