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

// ProxyPods is what a workload controller reads of its pods: the pods of
// the proxy and vMCP Deployments (naming.WorkloadPodSelector), cached trimmed
// to their phase, readiness and containers' states (framework.TrimPod),
// so that its status can say a pod failed, as ToolHive v0.63.0's operator
// says it.
type ProxyPods struct {
	app     string
	pods    cache.Indexer
	handler cache.ResourceEventHandlerFuncs
}

// WatchProxyPods caches the pods and re-syncs, through l, the workload of
// kind app (naming.AppMCPServer, naming.AppMCPRemoteProxy,
// naming.AppVirtualMCPServer) a pod belongs to when the pod appears, goes
// away, or changes what its status reads of it (viewPod): a pod's other
// status writes, such as its conditions' probe times, enqueue nothing.
// The three workload kinds share one informer.
func WatchProxyPods(d *framework.Deps, l *framework.Loop, app string) (*ProxyPods, error) {
	inf, err := d.SelectedInformer(naming.WorkloadPodSelector, func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
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

// Of returns the cached pods of the proxy name in namespace, selected as
// ToolHive's operator selects an MCPServer's or MCPRemoteProxy's: by all
// of its proxy's labels, and counted as it counts them: a pod being
// deleted is left out.
func (p *ProxyPods) Of(namespace, name string) []*corev1.Pod {
	return Counted(p.All(namespace, name))
}

// Counted returns the pods ToolHive's operator counts of a proxy's: those
// not being deleted (pods is left as it was).
func Counted(pods []*corev1.Pod) []*corev1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil })
}

// All returns every cached pod of the workload name in namespace, by all
// of its labels, those being deleted included: ToolHive v0.63.0's
// operator counts a vMCP's pods so (it lists them by those labels and
// skips none).
func (p *ProxyPods) All(namespace, name string) []*corev1.Pod {
	objs, err := p.pods.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil
	}
	want := labels.SelectorFromSet(naming.Labels(p.app, name))
	var out []*corev1.Pod
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && want.Matches(labels.Set(pod.Labels)) {
			out = append(out, pod)
		}
	}
	return out
}

// podView is what a workload's status reads of one of its pods. A vMCP's
// counts its pods in phase Failed and its ready pods, which a proxy's
// does not (a container's failure comes first in PodFailure, and a
// proxy's readiness is its Deployment's): a pod turning Failed or ready
// re-syncs the vMCP.
type podView struct {
	labels  string
	failure string
	failed  bool
	ready   bool
}

func viewPod(obj any) podView {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return podView{}
	}
	return podView{labels: labels.Set(pod.Labels).String(), failure: PodFailure(pod), failed: pod.Status.Phase == corev1.PodFailed, ready: PodReady(pod)}
}

// PodReady reports a pod that has passed its readiness probes: its Ready
// condition is True. ToolHive v0.63.0's operator counts a vMCP's ready
// pods by it, not by their phase.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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
