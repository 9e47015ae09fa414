package virtualmcpserver

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// withEmbedding names the EmbeddingServer "embed" in spec.embeddingServerRef.
func withEmbedding(v *thv1.VirtualMCPServer) {
	v.Spec.EmbeddingServerRef = &thv1.EmbeddingServerRef{Name: "embed"}
}

// embeddingServer is "embed" as its controller leaves it: phase and ready
// replicas, and its URL.
func embeddingServer(phase string, ready int32) *thv1.EmbeddingServer {
	return toolhivetest.NewEmbeddingServer(testNS, "embed", func(e *thv1.EmbeddingServer) {
		e.Status = thv1.EmbeddingServerStatus{Phase: phase, ReadyReplicas: ready, URL: "http://embed.team-a.svc.cluster.local:8080"}
	})
}

// setEmbedding stores the EmbeddingServer's new status and refreshes the
// caches, as its controller's status write would reach this one.
func (f *fixture) setEmbedding(phase string, ready int32, url string) {
	f.T.Helper()
	e, err := f.Toolhive.ToolhiveV1beta1().EmbeddingServers(testNS).Get(context.Background(), "embed", metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	e.Status.Phase, e.Status.ReadyReplicas, e.Status.URL = phase, ready, url
	if _, err := f.Toolhive.ToolhiveV1beta1().EmbeddingServers(testNS).UpdateStatus(context.Background(), e, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	f.Refresh()
}

// optimizer reads config.yaml's optimizer section.
func (f *fixture) optimizer() map[string]any {
	f.T.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.VMCPConfigMapName("agg"), metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data[naming.VMCPConfigKey]), &cfg); err != nil {
		f.T.Fatal(err)
	}
	opt, _ := cfg["optimizer"].(map[string]any)
	return opt
}

// A missing EmbeddingServer fails the vMCP as ToolHive's operator does
// (EmbeddingServerNotFound, one Warning event) and nothing is written but
// the status; its creation, not yet ready, keeps it Pending.
func TestEmbeddingServerMissingThenNotReady(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withEmbedding), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	v := f.get("agg")
	c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionEmbeddingServerReady)
	if v.Status.Phase != thv1.VirtualMCPServerPhaseFailed || c == nil || c.Reason != thv1.ReasonEmbeddingServerNotFound ||
		c.Message != "Referenced EmbeddingServer embed not found" {
		t.Errorf("status %+v", v.Status)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonEmbeddingServerNotFound) {
		t.Errorf("events %q", evs)
	}
	if _, err := f.Toolhive.ToolhiveV1beta1().EmbeddingServers(testNS).Create(context.Background(),
		embeddingServer(thv1.EmbeddingServerPhaseDownloading, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err = f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	v = f.get("agg")
	c = meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionEmbeddingServerReady)
	if v.Status.Phase != thv1.VirtualMCPServerPhasePending || v.Status.Message != "Waiting for EmbeddingServer to become ready" ||
		c == nil || c.Reason != thv1.ReasonEmbeddingServerNotReady {
		t.Errorf("status %+v", v.Status)
	}
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Errorf("waiting wrote %s", wt.Describe(acts))
	}
}

// Once the EmbeddingServer is ready the vMCP is deployed with the
// optimizer pointed at its URL (an empty optimizer section made for it,
// without schema defaults, as ToolHive's operator makes it); the condition
// goes with the reference.
func TestEmbeddingServerReadyPointsTheOptimizer(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withEmbedding), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup),
		embeddingServer(thv1.EmbeddingServerPhaseReady, 1))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create secrets", "create serviceaccounts", "create rolebindings", "create configmaps", "create services",
		"create deployments", "patch virtualmcpservers/status")
	if opt := f.optimizer(); len(opt) != 1 || opt["embeddingService"] != "http://embed.team-a.svc.cluster.local:8080" {
		t.Errorf("optimizer %v", opt)
	}
	v := f.get("agg")
	if !meta.IsStatusConditionTrue(v.Status.Conditions, thv1.ConditionEmbeddingServerReady) ||
		meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionUnsupportedFields) != nil {
		t.Errorf("conditions %+v", v.Status.Conditions)
	}
	f.converge("agg")

	// A hand-written embeddingService is replaced; the written
	// optimizer's other fields and schema defaults stay.
	f.update("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](`{"optimizer":{"embeddingService":"http://elsewhere:1","embeddingServiceTimeout":"10s"}}`)
	})
	f.converge("agg")
	if opt := f.optimizer(); opt["embeddingService"] != "http://embed.team-a.svc.cluster.local:8080" || opt["embeddingServiceTimeout"] != "10s" {
		t.Errorf("optimizer %v", opt)
	}

	f.update("agg", func(v *thv1.VirtualMCPServer) { v.Spec.EmbeddingServerRef = nil })
	f.converge("agg")
	if c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionEmbeddingServerReady); c != nil {
		t.Errorf("condition stays without the reference: %+v", c)
	}
	if opt := f.optimizer(); opt["embeddingService"] != "http://elsewhere:1" {
		t.Errorf("optimizer without the reference %v", opt)
	}
}

// A new URL rolls the vMCP once: its config and its Deployment, nothing
// else (the status is unchanged). An EmbeddingServer no longer ready
// leaves the running vMCP as it is and says so in its status only.
func TestEmbeddingServerChangesCostOnlyWhatTheyChange(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withEmbedding), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup),
		embeddingServer(thv1.EmbeddingServerPhaseReady, 1))
	f.converge("agg")
	f.setEmbedding(thv1.EmbeddingServerPhaseReady, 1, "http://embed.team-a.svc.cluster.local:9000")
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	f.converge("agg")

	f.setEmbedding(thv1.EmbeddingServerPhaseDownloading, 0, "http://embed.team-a.svc.cluster.local:9000")
	acts, err = f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	if v := f.get("agg"); v.Status.Phase != thv1.VirtualMCPServerPhasePending {
		t.Errorf("status %+v", v.Status)
	}
	f.setEmbedding(thv1.EmbeddingServerPhaseReady, 1, "http://embed.team-a.svc.cluster.local:9000")
	acts, err = f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
}

// An EmbeddingServer's events reach exactly the vMCPs naming it, through
// the index, and only when what they read of it changed: a status write
// that changes neither readiness nor URL enqueues nothing.
func TestEmbeddingServerEventsReachItsReferrers(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withEmbedding), newVMCP("other"))
	old := embeddingServer(thv1.EmbeddingServerPhaseDownloading, 0)
	f.c.embeddingHandler().OnAdd(old, false)
	if keys := drainQueue(f); len(keys) != 1 || keys[0] != testNS+"/agg" {
		t.Errorf("add enqueued %v", keys)
	}
	same := old.DeepCopy()
	same.Status.Message, same.ResourceVersion = "still downloading", "2"
	f.c.embeddingHandler().OnUpdate(old, same)
	if keys := drainQueue(f); len(keys) != 0 {
		t.Errorf("a status write changing nothing a vMCP reads enqueued %v", keys)
	}
	ready := embeddingServer(thv1.EmbeddingServerPhaseReady, 1)
	f.c.embeddingHandler().OnUpdate(same, ready)
	if keys := drainQueue(f); len(keys) != 1 || keys[0] != testNS+"/agg" {
		t.Errorf("ready enqueued %v", keys)
	}
}
