package workload

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// addCounter counts Add calls by key; the real queue would fold them.
type addCounter struct {
	workqueue.TypedRateLimitingInterface[string]
	mu   sync.Mutex
	adds map[string]int
}

func (q *addCounter) Add(key string) {
	q.mu.Lock()
	q.adds[key]++
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
	loop := controller.NewLoop("test-wiring", func(context.Context, string) error { return nil })
	queue := &addCounter{TypedRateLimitingInterface: loop.Queue, adds: map[string]int{}}
	loop.Queue = queue
	defer queue.ShutDown()
	w := Wiring{Primary: f.Toolhive().V1beta1().MCPServers().Informer(), Owner: thv1.Kind(thv1.KindMCPServer),
		Lookup:      func(string, string) (types.UID, bool) { return "", false },
		OIDCConfigs: f.Toolhive().V1beta1().MCPOIDCConfigs().Informer()}
	if err := w.Register(loop); err != nil {
		t.Fatal(err)
	}
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
