package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// proxyPod is a proxy pod of workload name whose one container is in
// state.
func proxyPod(name, pod string, phase corev1.PodPhase, state corev1.ContainerState) *corev1.Pod {
	return wt.ProxyPod(testNS, naming.AppMCPServer, name, pod, phase, state)
}

var waiting = wt.Waiting

// The phase follows the proxy pods as ToolHive v0.63.0's operator reads
// them: with no ready replica, a container in CrashLoopBackOff,
// CreateContainerError or InvalidImageName, one that exited non-zero, or a
// Failed pod makes the server Failed, "MCP server pod failed: " and the
// first failure by pod name; ImagePullBackOff is Pending, since the
// kubelet retries it; a terminating pod is not counted, but its proxy
// reads "No healthy pods found" rather than "being created" while it is
// the only one; a ready replica wins; a remote proxy's pod of the same
// name is not read. A ready replica whose runner StatefulSet is missing
// is Pending, as ToolHive's operator reads it (every other case has the
// runner's StatefulSet).
func TestPhaseFollowsProxyPods(t *testing.T) {
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		ready   int32
		phase   string
		cond    metav1.ConditionStatus
		message string
	}{
		{"no pods", nil, 0, thv1.MCPServerPhasePending, metav1.ConditionFalse, "MCP server is being created"},
		{"crash loop", []*corev1.Pod{proxyPod("fetch", "fetch-a", corev1.PodRunning, waiting("CrashLoopBackOff"))}, 0,
			thv1.MCPServerPhaseFailed, metav1.ConditionFalse, "MCP server pod failed: CrashLoopBackOff"},
		{"first failure by pod name", []*corev1.Pod{
			proxyPod("fetch", "fetch-c", corev1.PodPending, waiting("InvalidImageName")),
			proxyPod("fetch", "fetch-b", corev1.PodRunning, terminated),
			proxyPod("fetch", "fetch-d", corev1.PodFailed, corev1.ContainerState{}),
		}, 0, thv1.MCPServerPhaseFailed, metav1.ConditionFalse, "MCP server pod failed: ContainerTerminated"},
		{"image pull back-off", []*corev1.Pod{proxyPod("fetch", "fetch-a", corev1.PodPending, waiting("ImagePullBackOff"))}, 0,
			thv1.MCPServerPhasePending, metav1.ConditionFalse, "MCP server is starting"},
		{"a terminating pod is not counted, but listed", []*corev1.Pod{func() *corev1.Pod {
			p := proxyPod("fetch", "fetch-a", corev1.PodRunning, waiting("CrashLoopBackOff"))
			p.DeletionTimestamp = &metav1.Time{}
			return p
		}()}, 0, thv1.MCPServerPhasePending, metav1.ConditionFalse, "No healthy pods found"},
		{"a terminating pod beside a new one", []*corev1.Pod{func() *corev1.Pod {
			p := proxyPod("fetch", "fetch-a", corev1.PodRunning, waiting("CrashLoopBackOff"))
			p.DeletionTimestamp = &metav1.Time{}
			return p
		}(), proxyPod("fetch", "fetch-b", corev1.PodPending, waiting("ContainerCreating"))}, 0,
			thv1.MCPServerPhasePending, metav1.ConditionFalse, "MCP server is starting"},
		{"a ready replica wins", []*corev1.Pod{proxyPod("fetch", "fetch-a", corev1.PodRunning, waiting("CrashLoopBackOff"))}, 1,
			thv1.MCPServerPhaseReady, metav1.ConditionTrue, "MCP server is running"},
		{"a remote proxy's pod", []*corev1.Pod{func() *corev1.Pod {
			p := proxyPod("fetch", "fetch-a", corev1.PodRunning, waiting("CrashLoopBackOff"))
			p.Labels = naming.Labels(naming.AppMCPRemoteProxy, "fetch")
			return p
		}()}, 0, thv1.MCPServerPhasePending, metav1.ConditionFalse, "MCP server is being created"},
		{"the runner's StatefulSet is missing", nil, 1, thv1.MCPServerPhasePending, metav1.ConditionFalse, msgRunnerMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.message != msgRunnerMissing {
				objs = append(objs, runnerStatefulSet("fetch", "fetch"))
			}
			f := newFixture(t, append(objs, newServer("fetch"))...)
			f.converge("fetch")
			f.ProxyPodsAndReady(testNS, "fetch", tc.ready, tc.pods...)
			f.converge("fetch")
			s, err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionReady)
			reason := thv1.ReasonNotReady
			if tc.cond == metav1.ConditionTrue {
				reason = thv1.ReasonReady
			}
			if s.Status.Phase != tc.phase || c == nil || c.Status != tc.cond || c.Reason != reason || s.Status.Message != tc.message || c.Message != tc.message {
				t.Fatalf("phase %q message %q, Ready %+v; want %q %q %s", s.Status.Phase, s.Status.Message, c, tc.phase, tc.message, tc.cond)
			}
			f.Refresh()
			if acts, _ := f.sync("fetch"); len(acts) != 0 {
				t.Errorf("converged: %s", wt.Describe(acts))
			}
		})
	}
}

// runnerStatefulSet is the StatefulSet ToolHive's runner creates for the
// MCPServer server, with the labels it gives it.
func runnerStatefulSet(name, server string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name,
		Labels: map[string]string{naming.LabelToolhive: "true", naming.LabelToolhiveName: server}}}
}

// A runner StatefulSet's creation and deletion re-sync the MCPServer its
// toolhive-name label names, else the one named as it.
func TestRunnerStatefulSetEvents(t *testing.T) {
	f := newFixture(t, newServer("fetch"))
	labelled := runnerStatefulSet("fetch-backend", "fetch")
	unlabelled := runnerStatefulSet("other", "")
	delete(unlabelled.Labels, naming.LabelToolhiveName)
	f.c.enqueueRunner(labelled)
	f.c.enqueueRunner(cache.DeletedFinalStateUnknown{Key: testNS + "/other", Obj: unlabelled})
	var keys []string
	for f.c.Queue.Len() > 0 {
		k, _ := f.c.Queue.Get()
		keys = append(keys, k.String())
		f.c.Queue.Done(k)
	}
	if want := []string{testNS + "/fetch", testNS + "/other"}; !slices.Equal(keys, want) {
		t.Errorf("enqueued %q, want %q", keys, want)
	}
}

// ToolHive's advisory conditions are on every MCPServer, with its
// statuses, reasons and messages, whatever else the spec asks; a missing
// reference does not keep them off (ToolHive's operator writes them first).
func TestAdvisoryConditions(t *testing.T) {
	replicas := func(n int32) func(*thv1.MCPServer) { return func(s *thv1.MCPServer) { s.Spec.Replicas = &n } }
	redis := func(s *thv1.MCPServer) {
		s.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379"}
	}
	type want struct{ status, reason string }
	for _, tc := range []struct {
		name                    string
		mut                     []func(*thv1.MCPServer)
		stdio, session, limiter want
	}{
		{"defaults", nil,
			want{"False", thv1.ReasonStdioReplicaCapNotActive}, want{"False", thv1.ReasonSessionStorageNotApplicable}, want{"True", thv1.ReasonRateLimitNotApplicable}},
		{"stdio with three replicas", []func(*thv1.MCPServer){replicas(3), func(s *thv1.MCPServer) { s.Spec.Transport = thv1.TransportStdio }},
			want{"True", thv1.ReasonStdioReplicaCapped}, want{"True", thv1.ReasonSessionStorageMissing}, want{"True", thv1.ReasonRateLimitNotApplicable}},
		{"two replicas with Redis", []func(*thv1.MCPServer){replicas(2), redis, func(s *thv1.MCPServer) { s.Spec.Transport = thv1.TransportStreamableHTTP }},
			want{"False", thv1.ReasonStdioReplicaCapNotActive}, want{"False", thv1.ReasonSessionStorageConfigured}, want{"True", thv1.ReasonRateLimitNotApplicable}},
		{"shared rate limit", []func(*thv1.MCPServer){redis, func(s *thv1.MCPServer) {
			s.Spec.RateLimiting = &thv1.RateLimitConfig{Shared: &thv1.RateLimitBucket{MaxTokens: 10, RefillPeriod: "1m"}}
		}}, want{"False", thv1.ReasonStdioReplicaCapNotActive}, want{"False", thv1.ReasonSessionStorageNotApplicable}, want{"True", thv1.ReasonRateLimitConfigValid}},
		{"per-user limit without authentication, stored before the schema refused it", []func(*thv1.MCPServer){redis, func(s *thv1.MCPServer) {
			s.Spec.RateLimiting = &thv1.RateLimitConfig{Tools: []thv1.ToolRateLimitConfig{{Name: "t", PerUser: &thv1.RateLimitBucket{MaxTokens: 1, RefillPeriod: "1m"}}}}
		}}, want{"False", thv1.ReasonStdioReplicaCapNotActive}, want{"False", thv1.ReasonSessionStorageNotApplicable}, want{"False", thv1.ReasonRateLimitPerUserRequiresAuth}},
		{"a missing tool config", []func(*thv1.MCPServer){func(s *thv1.MCPServer) { s.Spec.ToolConfigRef = &thv1.ToolConfigReference{Name: "missing"} }},
			want{"False", thv1.ReasonStdioReplicaCapNotActive}, want{"False", thv1.ReasonSessionStorageNotApplicable}, want{"True", thv1.ReasonRateLimitNotApplicable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newServer("fetch", tc.mut...))
			f.converge("fetch")
			s, err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for typ, w := range map[string]want{thv1.ConditionStdioReplicaCapped: tc.stdio, thv1.ConditionSessionStorageWarning: tc.session,
				thv1.ConditionRateLimitConfigValid: tc.limiter} {
				c := meta.FindStatusCondition(s.Status.Conditions, typ)
				if c == nil || string(c.Status) != w.status || c.Reason != w.reason || c.Message == "" || c.ObservedGeneration != s.Generation {
					t.Errorf("%s = %+v, want %s %s", typ, c, w.status, w.reason)
				}
			}
		})
	}
}

// CABundleRefValidated follows the CA bundle ConfigMap of the MCPServer's
// inline OIDC configuration, as ToolHive v0.63.0's operator reports it.
func TestCABundleRefValidated(t *testing.T) {
	s := newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp"}
	})
	f := newFixture(t, s, newOIDCConfig("auth", true, true))
	f.converge("fetch")
	f.CheckOIDCCABundle(t, wt.CABundleCheck{Namespace: testNS, ConfigMap: "idp-ca", Handler: f.c.CABundleHandler(), Queue: f.c.Queue,
		Sync: func() { f.converge("fetch") },
		Conditions: func() []metav1.Condition {
			got, err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return got.Status.Conditions
		}})
}

// AuthzPrimaryUpstreamProviderIgnored is True, in ToolHive's words, while
// the inline Cedar authorization names a primaryUpstreamProvider (only a
// vMCP's embedded authorization server acts on it), and absent otherwise.
func TestPrimaryUpstreamProviderIgnored(t *testing.T) {
	authz := func(provider string) func(*thv1.MCPServer) {
		return func(s *thv1.MCPServer) {
			s.Spec.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline,
				Inline: &thv1.InlineCedar{Policies: []string{`permit(principal, action, resource);`}, PrimaryUpstreamProvider: provider}}
		}
	}
	for _, tc := range []struct {
		provider string
		want     bool
	}{{"github", true}, {"", false}} {
		f := newFixture(t, newServer("fetch", authz(tc.provider)))
		f.converge("fetch")
		s, err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionAuthzPrimaryUpstreamProviderIgnored)
		switch {
		case !tc.want && c != nil:
			t.Errorf("without a provider: %+v", c)
		case tc.want && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != thv1.ReasonAuthzPrimaryUpstreamProviderIgnored ||
			!strings.Contains(c.Message, `primaryUpstreamProvider="github" has no effect on MCPServer`)):
			t.Errorf("with a provider: %+v", c)
		}
	}
}
