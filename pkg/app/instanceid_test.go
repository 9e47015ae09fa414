package app

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

var quick = wait.Backoff{Steps: 3, Duration: time.Millisecond, Factor: 1}

func telemetryConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "toolhive-system", Name: InstanceIDConfigMap, ResourceVersion: "7"}, Data: data}
}

// writes are the verbs of the write actions a client made.
func writes(c *k8sfake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v)
		}
	}
	return out
}

// idWrites is how many of the instance id's writes with verb
// hivekeeper_writes_total counted as successes.
func idWrites(verb string) float64 {
	return testutil.ToFloat64(metrics.Writes.WithLabelValues(instanceIDWriter, "configmaps", verb, metrics.OutcomeSuccess))
}

// The id ToolHive's operator stored is read and nothing is written.
func TestInstanceIDRead(t *testing.T) {
	c := k8sfake.NewClientset(telemetryConfigMap(map[string]string{
		InstanceIDKey: `{"instance_id":"5d1c","last_update_check":"2026-11-30T10:00:00Z","latest_version":"v0.66.0"}`}))
	id, err := ResolveInstanceID(context.Background(), c, "toolhive-system", quick)
	if err != nil || id != "5d1c" {
		t.Fatalf("id %q, %v", id, err)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("writes %v, want none", w)
	}
}

// A missing ConfigMap is created as ToolHive's operator creates it: the
// key holds the record with a new id, a zero update check and no version.
func TestInstanceIDCreated(t *testing.T) {
	c := k8sfake.NewClientset()
	before := idWrites("create")
	id, err := ResolveInstanceID(context.Background(), c, "toolhive-system", quick)
	if err != nil {
		t.Fatal(err)
	}
	if n := idWrites("create") - before; n != 1 {
		t.Errorf("hivekeeper_writes_total counted %v creates, want 1", n)
	}
	cm, err := c.CoreV1().ConfigMaps("toolhive-system").Get(context.Background(), InstanceIDConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"instance_id":"` + id + `","last_update_check":"0001-01-01T00:00:00Z","latest_version":""}`
	if got := cm.Data[InstanceIDKey]; got != want || !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(id) {
		t.Errorf("stored %s, want %s", got, want)
	}
	if len(cm.Labels) != 0 || len(cm.Data) != 1 {
		t.Errorf("labels %v, data %v: want no label and the one key", cm.Labels, cm.Data)
	}
}

// A ConfigMap without a usable id gets one under the lock of the version
// read, its other keys kept; when another writer stored one first (a
// conflict), that one is used.
func TestInstanceIDStoredInAnExistingConfigMap(t *testing.T) {
	c := k8sfake.NewClientset(telemetryConfigMap(map[string]string{"other": "x", InstanceIDKey: "not json"}))
	id, err := ResolveInstanceID(context.Background(), c, "toolhive-system", quick)
	if err != nil || id == "" {
		t.Fatalf("id %q, %v", id, err)
	}
	cm, _ := c.CoreV1().ConfigMaps("toolhive-system").Get(context.Background(), InstanceIDConfigMap, metav1.GetOptions{})
	if StoredInstanceID(cm) != id || cm.Data["other"] != "x" {
		t.Errorf("data %v, want id %s and the other key kept", cm.Data, id)
	}
	var patch string
	for _, a := range c.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patch = string(p.GetPatch())
		}
	}
	if !regexp.MustCompile(`"resourceVersion":"7"`).MatchString(patch) {
		t.Errorf("patch %s carries no optimistic lock", patch)
	}

	c = k8sfake.NewClientset(telemetryConfigMap(map[string]string{}))
	stored := false
	c.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if stored {
			return false, nil, nil
		}
		stored = true
		cm := telemetryConfigMap(map[string]string{InstanceIDKey: `{"instance_id":"theirs"}`})
		cm.ResourceVersion = ""
		if err := c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), cm, "toolhive-system"); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, InstanceIDConfigMap, errors.New("changed"))
	})
	if id, err := ResolveInstanceID(context.Background(), c, "toolhive-system", quick); err != nil || id != "theirs" {
		t.Errorf("after a conflict: id %q, %v; want the other writer's", id, err)
	}
}

// Forbidden is final and returned at once; an error that may pass is
// retried, then reported as ErrInstanceIDUnavailable.
func TestInstanceIDErrors(t *testing.T) {
	c := k8sfake.NewClientset()
	c.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, InstanceIDConfigMap, errors.New("no"))
	})
	if _, err := ResolveInstanceID(context.Background(), c, "toolhive-system", quick); !apierrors.IsForbidden(err) || len(c.Actions()) != 1 {
		t.Errorf("forbidden: %v after %d calls; want forbidden after 1", err, len(c.Actions()))
	}

	// A namespace that does not exist (no ToolHive operator ever ran
	// there) is final too: the process runs without the id.
	c = k8sfake.NewClientset()
	c.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "toolhive-system")
	})
	if id, err := ResolveInstanceID(context.Background(), c, "toolhive-system", quick); !errors.Is(err, errNoNamespace) || errors.Is(err, ErrInstanceIDUnavailable) || id != "" || len(c.Actions()) != 2 {
		t.Errorf("no namespace: %q, %v after %d calls; want a final error after a get and a create", id, err, len(c.Actions()))
	}

	c = k8sfake.NewClientset()
	c.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("overloaded")
	})
	if _, err := ResolveInstanceID(context.Background(), c, "toolhive-system", quick); !errors.Is(err, ErrInstanceIDUnavailable) || len(c.Actions()) != quick.Steps {
		t.Errorf("unavailable: %v after %d calls; want ErrInstanceIDUnavailable after %d", err, len(c.Actions()), quick.Steps)
	}
}

// The id is looked up only where the release passes it to the workloads
// and nothing opts out; a lookup refused for good leaves the workloads
// without it, and one that may pass is an error.
func TestResolveUsageMetrics(t *testing.T) {
	ctx := context.Background()
	stored := telemetryConfigMap(map[string]string{InstanceIDKey: `{"instance_id":"5d1c"}`})
	withID := release.Release{WorkloadUsageMetrics: true}
	for _, tc := range []struct {
		name    string
		rel     release.Release
		in      wiring.UsageMetrics
		wantID  string
		actions int
	}{
		{name: "older release", rel: release.Release{}, actions: 0},
		{name: "update check skipped", rel: withID, in: wiring.UsageMetrics{SkipUpdateCheck: true}, actions: 0},
		{name: "stored id", rel: withID, wantID: "5d1c", actions: 1},
		{name: "usage metrics off", rel: withID, in: wiring.UsageMetrics{Disabled: true}, wantID: "5d1c", actions: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := k8sfake.NewClientset(stored.DeepCopy())
			u, err := ResolveUsageMetrics(ctx, c, tc.rel, tc.in, "toolhive-system")
			want := tc.in
			want.AnonymousID = tc.wantID
			if err != nil || u != want {
				t.Errorf("got %+v, %v; want %+v", u, err, want)
			}
			if n := len(c.Actions()); n != tc.actions {
				t.Errorf("%d API actions, want %d: %v", n, tc.actions, c.Actions())
			}
		})
	}

	forbidden := k8sfake.NewClientset()
	forbidden.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, InstanceIDConfigMap, errors.New("no"))
	})
	if u, err := ResolveUsageMetrics(ctx, forbidden, withID, wiring.UsageMetrics{}, "toolhive-system"); err != nil || u.AnonymousID != "" {
		t.Errorf("forbidden: got %+v, %v; want no id and no error", u, err)
	}

	saved := InstanceIDBackoff
	t.Cleanup(func() { InstanceIDBackoff = saved })
	InstanceIDBackoff = quick
	down := k8sfake.NewClientset()
	down.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	if _, err := ResolveUsageMetrics(ctx, down, withID, wiring.UsageMetrics{}, "toolhive-system"); !errors.Is(err, ErrInstanceIDUnavailable) {
		t.Errorf("unavailable: %v, want ErrInstanceIDUnavailable", err)
	}
}
