package workload

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// addCounter counts Add calls by key; the real queue would fold them.
type addCounter struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]
	mu   sync.Mutex
	adds map[string]int
}

func (q *addCounter) Add(key cache.ObjectName) {
	q.mu.Lock()
	q.adds[key.String()]++
	q.mu.Unlock()
	q.TypedRateLimitingInterface.Add(key)
}

func (q *addCounter) count(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.adds[key]
}

// TestPrimaryStatusWritesDoNotRequeue: the workload controllers' own status
// writes come back as update events of their primary resource; those must
// not re-queue it (a status message that changes per failed attempt would
// otherwise retry at once, bypassing the backoff). A spec change must.
func TestPrimaryStatusWritesDoNotRequeue(t *testing.T) {
	server := func(name string) *thv1.MCPServer {
		return &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1, ResourceVersion: "1"}}
	}
	client := thfake.NewSimpleClientset(server("srv"))
	f := informers.NewSharedInformerFactory(client, 0)
	if err := index.AddToInformers(f); err != nil {
		t.Fatal(err)
	}
	kf := kubeinformers.NewSharedInformerFactory(k8sfake.NewClientset(), 0)
	d := &framework.Deps{Kube: k8sfake.NewClientset(), Toolhive: client,
		Scopes: []framework.Scope{{Kube: kf, KubeAll: kf, Toolhive: f}}}
	primary := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPServers().Informer()
	})
	// The queue is replaced before the informers start: no event is lost.
	base, err := NewBase(d, Spec{Name: "test-wiring", Kind: thv1.KindMCPServer, Primary: primary,
		Sync: func(context.Context, cache.ObjectName) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	queue := &addCounter{TypedRateLimitingInterface: base.Queue, adds: map[string]int{}}
	base.Queue = queue
	defer queue.ShutDown()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	// waitAdd waits for the first add of key. A listener receives events
	// in order, so every event before it has been handled too.
	waitAdd := func(key string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a hang guard
		for queue.count(key) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if queue.count(key) == 0 {
			t.Fatalf("%s never enqueued", key)
		}
	}
	servers := client.ToolhiveV1beta1().MCPServers("ns")
	update := func(mutate func(*thv1.MCPServer)) {
		t.Helper()
		cur, err := servers.Get(ctx, "srv", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur = cur.DeepCopy()
		mutate(cur)
		if _, err := servers.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAdd("ns/srv") // the initial add
	// A spec change, then a status write (the fake does not bump
	// resourceVersions itself), then another object as a marker.
	update(func(s *thv1.MCPServer) { s.ResourceVersion, s.Generation = "2", 2 })
	update(func(s *thv1.MCPServer) { s.ResourceVersion, s.Status.Message = "3", "exceeded quota: used=7" })
	if _, err := servers.Create(ctx, server("marker"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAdd("ns/marker")
	if got := queue.count("ns/srv"); got != 2 {
		t.Errorf("ns/srv enqueued %d times, want 2: its add and its spec change, not its status write", got)
	}
}
