package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
)

// quiet is how long the controllers must stay idle, with no write, before
// a run counts as settled: long enough for the watch events of their last
// writes to come back through the informers and wake whatever they wake.
const quiet = 300 * time.Millisecond

// write is one write a controller sent to the in-memory clients.
type write struct {
	gvr         schema.GroupVersionResource
	verb        string
	subresource string
	namespace   string
	name        string
	// selector is a delete-collection's label selector.
	selector string
	patch    []byte
}

func (w write) key() string { return w.gvr.Resource + "/" + w.namespace + "/" + w.name }

// event is one event a controller recorded.
type event struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"type"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

// run is the outcome of hivekeeper's controllers run over a snapshot: the
// clients holding what they left, their writes in order, the drift their
// comparators found and the events they recorded.
type run struct {
	kube *k8sfake.Clientset
	th   *thfake.Clientset

	mu      sync.Mutex
	writes  []write
	drift   map[string][]string
	events  []event
	settled bool
	took    time.Duration
}

func (r *run) record(w write) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, w)
}

func (r *run) writeCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

// runControllers runs hivekeeper's controllers, built by app.Build with
// opts exactly as the binary builds them, over in-memory clients holding
// snap, until every controller is idle and nothing has been written for a
// while, or timeout. Nothing reaches the cluster: the clients are
// client-go's fakes, whose object tracker applies creates, merge patches
// and deletes and sends the watch events the informers live on, so a
// controller goes through as many passes as it would on the cluster (a
// RoleBinding deleted for its roleRef is created again on the next one).
func runControllers(ctx context.Context, snap *snapshot, opts app.Options, timeout time.Duration, logger logr.Logger) (*run, error) {
	r := &run{
		kube:  k8sfake.NewClientset(snap.kube...),
		th:    thfake.NewSimpleClientset(snap.toolhive...),
		drift: map[string][]string{},
	}
	for _, c := range []*clienttesting.Fake{&r.kube.Fake, &r.th.Fake} {
		c.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if w, ok := toWrite(a); ok {
				r.record(w)
			}
			return false, nil, nil
		})
	}
	// The fake tracker applies a label selector to a list but not to a
	// watch; the informers of app.NewDeps list and watch by label, so a
	// watch here sends only what matches, as the API server's does.
	r.kube.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		wa, ok := a.(clienttesting.WatchActionImpl)
		if !ok || wa.WatchRestrictions.Labels == nil || wa.WatchRestrictions.Labels.Empty() {
			return false, nil, nil
		}
		sel := wa.WatchRestrictions.Labels
		w, err := r.kube.Tracker().Watch(a.GetResource(), a.GetNamespace(), wa.ListOptions)
		if err != nil {
			return false, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			m, err := meta.Accessor(e.Object)
			return e, err != nil || sel.Matches(labels.Set(m.GetLabels()))
		}), nil
	})
	opts.Drift = func(_, resource string, obj klog.ObjectRef, fields []string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		key := resource + "/" + obj.Namespace + "/" + obj.Name
		r.drift[key] = append(r.drift[key], fields...)
	}
	set, err := app.Build(r.kube, r.th, opts, &recorder{run: r})
	if err != nil {
		return nil, err
	}
	began := time.Now()
	runCtx, cancel := context.WithCancel(logr.NewContext(ctx, logger))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- set.Run(runCtx, nil) }()

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	last, idleSince := -1, time.Time{}
wait:
	for {
		select {
		case <-tick.C:
			n := r.writeCount()
			if !set.Idle() || n != last {
				last, idleSince = n, time.Time{}
				continue
			}
			if idleSince.IsZero() {
				idleSince = time.Now()
			}
			if time.Since(idleSince) >= quiet {
				r.settled = true
				break wait
			}
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			cancel()
			<-done
			return nil, ctx.Err()
		case err := <-done:
			return nil, fmt.Errorf("hivekeeper's controllers stopped: %w", err)
		}
	}
	r.took = time.Since(began)
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	case <-time.After(30 * time.Second):
		return nil, errors.New("hivekeeper's controllers did not stop within 30s")
	}
	return r, nil
}

// toWrite is the write an action is, false for a read.
func toWrite(a clienttesting.Action) (write, bool) {
	w := write{gvr: a.GetResource(), verb: a.GetVerb(), subresource: a.GetSubresource(), namespace: a.GetNamespace()}
	switch w.verb {
	case "create", "update", "patch", "delete", "delete-collection":
	default:
		return w, false
	}
	switch a := a.(type) {
	case clienttesting.CreateAction:
		if m, err := meta.Accessor(a.GetObject()); err == nil {
			w.name = m.GetName()
		}
	case clienttesting.UpdateAction:
		if m, err := meta.Accessor(a.GetObject()); err == nil {
			w.name = m.GetName()
		}
	case clienttesting.PatchAction:
		w.name, w.patch = a.GetName(), a.GetPatch()
	case clienttesting.DeleteAction:
		w.name = a.GetName()
	case clienttesting.DeleteCollectionAction:
		if l := a.GetListRestrictions().Labels; l != nil {
			w.selector = l.String()
		}
	default:
		return w, false
	}
	return w, true
}

// recorder keeps the events the controllers record.
type recorder struct{ run *run }

func (rec *recorder) Event(obj runtime.Object, eventtype, reason, message string) {
	e := event{Kind: kindOf(obj), Type: eventtype, Reason: reason, Message: message}
	if m, err := meta.Accessor(obj); err == nil {
		e.Namespace, e.Name = m.GetNamespace(), m.GetName()
	}
	rec.run.mu.Lock()
	defer rec.run.mu.Unlock()
	rec.run.events = append(rec.run.events, e)
}

func (rec *recorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	rec.Event(obj, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (rec *recorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	rec.Eventf(obj, eventtype, reason, messageFmt, args...)
}
