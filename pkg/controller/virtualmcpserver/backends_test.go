package virtualmcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// configOf decodes the config.yaml of the live ConfigMap.
func configOf(t *testing.T, f *fixture) map[string]any {
	t.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.VMCPConfigMapName("agg"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data[naming.VMCPConfigKey]), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func backendNames(cfg map[string]any) []string {
	var out []string
	list, _ := cfg["backends"].([]any)
	for _, b := range list {
		out = append(out, b.(map[string]any)["name"].(string))
	}
	return out
}

func vmcpContainer(t *testing.T, f *fixture) (corev1.PodSpec, corev1.Container) {
	t.Helper()
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep.Spec.Template.Spec, dep.Spec.Template.Spec.Containers[0]
}

func drainQueue(f *fixture) []string { return wt.Drain(f.c.Queue) }

// An MCPServerEntry joining the group is a backend at its remote URL, of
// type entry, with its CA bundle mounted at ToolHive's path and its
// headers in ToolHive's variables: one ConfigMap and one Deployment
// patch, then nothing.
func TestEntryJoinsAsBackend(t *testing.T) {
	f := newFixture(t, newVMCP("agg", inline), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPServerEntries(testNS).Create(context.Background(), newEntry("far", testGroup, withEntryExtras), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	f.ApplyServerBehaviour()
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("converged: %s", wt.Describe(acts))
	}

	cfg := configOf(t, f)
	var far map[string]any
	for _, b := range cfg["backends"].([]any) {
		if b.(map[string]any)["name"] == "far" {
			far = b.(map[string]any)
		}
	}
	want := map[string]any{"name": "far", "url": "https://mcp.remote.example/far", "transport": "streamable-http", "type": "entry",
		"caBundlePath": "/etc/toolhive/ca-bundles/far/bundle.pem", "metadata": map[string]any{"group": testGroup, "namespace": testNS,
			"remote_url": "https://mcp.remote.example/far", "tool_type": "mcp", "workload_type": "server_entry"}}
	if got, _ := json.Marshal(far); string(got) != mustJSONString(t, want) {
		t.Errorf("entry backend %s, want %s", got, mustJSONString(t, want))
	}
	pod, c := vmcpContainer(t, f)
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
		return v.Name == "ca-bundle-far" && v.ConfigMap != nil && v.ConfigMap.Name == "remote-ca" &&
			len(v.ConfigMap.Items) == 1 && v.ConfigMap.Items[0].Key == "bundle.pem" && v.ConfigMap.Items[0].Path == "bundle.pem"
	}) {
		t.Errorf("no CA bundle volume: %+v", pod.Volumes)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "ca-bundle-far" && m.MountPath == "/etc/toolhive/ca-bundles/far" && m.ReadOnly
	}) {
		t.Errorf("no CA bundle mount: %+v", c.VolumeMounts)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if got := env["TOOLHIVE_HEADER_FORWARD_FAR"].Value; got != `{"addPlaintextHeaders":{"X-Tenant":"a"},"addHeadersFromSecret":{"X-Api-Key":"HEADER_FORWARD_X_API_KEY_FAR"}}` {
		t.Errorf("header manifest %q", got)
	}
	if s := env["TOOLHIVE_SECRET_HEADER_FORWARD_X_API_KEY_FAR"]; s.Value != "" || s.ValueFrom == nil || s.ValueFrom.SecretKeyRef == nil ||
		s.ValueFrom.SecretKeyRef.Name != "remote-key" || s.ValueFrom.SecretKeyRef.Key != "key" {
		t.Errorf("header secret variable %+v", s)
	}
}

func mustJSONString(t *testing.T, v any) string {
	t.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// An entry's status writes enqueue nothing and write nothing; a change of
// its URL, headers, CA bundle or validity enqueues its aggregator, and a
// URL change rolls the vMCP once.
func TestEntryChangesRollOnceAndStatusWritesNothing(t *testing.T) {
	entry := newEntry("far", testGroup)
	f := newFixture(t, newVMCP("agg", inline), toolhivetest.NewGroup(testNS, testGroup), entry)
	f.converge("agg")
	drainQueue(f)

	statusOnly := entry.DeepCopy()
	statusOnly.ResourceVersion = "2"
	statusOnly.Status.Conditions = []metav1.Condition{{Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonEntryValid,
		LastTransitionTime: metav1.NewTime(toolhivetest.Now)}}
	if f.c.memberUpdated(entry, statusOnly); len(drainQueue(f)) != 0 {
		t.Error("a status write of the entry enqueued the vMCP")
	}
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPServerEntries(testNS).UpdateStatus(context.Background(), statusOnly, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("a status write of the entry wrote: %s", wt.Describe(acts))
	}

	for name, mut := range map[string]func(*thv1.MCPServerEntry){
		"url": func(e *thv1.MCPServerEntry) { e.Spec.RemoteURL = "https://mcp.remote.example/v2" },
		"headers": func(e *thv1.MCPServerEntry) {
			e.Spec.HeaderForward = &thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X-A": "b"}}
		},
		"ca": func(e *thv1.MCPServerEntry) {
			e.Spec.CABundleRef = &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "ca"}}
		},
		"failed": func(e *thv1.MCPServerEntry) { e.Status.Phase = thv1.MCPServerEntryPhaseFailed },
		"auth": func(e *thv1.MCPServerEntry) {
			e.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "x"}
		},
	} {
		changed := statusOnly.DeepCopy()
		mut(changed)
		if f.c.memberUpdated(statusOnly, changed); !slices.Equal(drainQueue(f), []string{testNS + "/agg"}) {
			t.Errorf("a %s change did not enqueue the vMCP once", name)
		}
	}

	moved := statusOnly.DeepCopy()
	moved.Spec.RemoteURL = "https://mcp.remote.example/v2"
	moved.Generation++
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPServerEntries(testNS).Update(context.Background(), moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ := f.sync("agg")
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	if !strings.Contains(wt.Describe(acts[:1]), "https://mcp.remote.example/v2") {
		t.Errorf("config patch lacks the new URL: %s", wt.Describe(acts))
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("converged: %s", wt.Describe(acts))
	}
}

// An entry whose checks failed is not a backend, as in ToolHive; alone in
// its group, the vMCP waits for a backend.
func TestFailedEntryIsNoBackend(t *testing.T) {
	f := newFixture(t, newVMCP("agg", inline), toolhivetest.NewGroup(testNS, testGroup),
		newEntry("bad", testGroup, func(e *thv1.MCPServerEntry) { e.Status.Phase = thv1.MCPServerEntryPhaseFailed }))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	if c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionReady); c == nil || c.Reason != thv1.ReasonNoBackends {
		t.Errorf("Ready %+v, want NoBackends", c)
	}
}

// A member's own externalAuthConfigRef is its backend's strategy (its
// secret as a secretKeyRef variable); spec.outgoingAuth.backends wins
// over it. A change of that config re-syncs the vMCP through the member
// and rolls it once.
func TestMemberAuthConfigIsItsStrategyAndRollsOnce(t *testing.T) {
	hdr := newExtAuth("hdr", headerInjection)
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Backends: map[string]thv1.BackendAuth{"over": {Type: thv1.BackendAuthTypeDiscovered}}}
	}, inline), toolhivetest.NewGroup(testNS, testGroup), hdr,
		newMember("own", testGroup, withAuthRef("hdr")), newMember("over", testGroup, withAuthRef("hdr")), newMember("plain", testGroup))
	f.converge("agg")
	out := configOf(t, f)["outgoingAuth"].(map[string]any)
	want := `{"backends":{"over":{"type":"unauthenticated"},"own":{"headerInjection":{"headerName":"X-Key","headerValueEnv":"TOOLHIVE_HEADER_INJECTION_VALUE_HDR"},"type":"header_injection"}},"source":"inline"}`
	if got := mustJSONString(t, out); got != want {
		t.Errorf("outgoingAuth %s, want %s", got, want)
	}
	_, c := vmcpContainer(t, f)
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "TOOLHIVE_HEADER_INJECTION_VALUE_HDR" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef.Name == "pat"
	}) {
		t.Errorf("no secret variable: %+v", c.Env)
	}
	conds := f.get("agg").Status.Conditions
	for _, typ := range []string{"DiscoveredAuthConfig-own", "DiscoveredAuthConfig-over", "BackendAuthConfig-over"} {
		if !meta.IsStatusConditionTrue(conds, typ) {
			t.Errorf("condition %s not True: %+v", typ, conds)
		}
	}

	drainQueue(f)
	f.c.memberAuthChanged(hdr)
	if keys := drainQueue(f); !slices.Equal(keys, []string{testNS + "/agg"}) {
		t.Fatalf("the member's config change enqueued %v", keys)
	}
	changed := hdr.DeepCopy()
	changed.Spec.HeaderInjection.HeaderName = "X-Other"
	changed.Status.ConfigHash = "hash-hdr-2"
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(testNS).Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ := f.sync("agg")
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	if !strings.Contains(wt.Describe(acts[:1]), "X-Other") {
		t.Errorf("config patch lacks the new header: %s", wt.Describe(acts))
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("converged: %s", wt.Describe(acts))
	}
}

// A backend strategy that cannot be built (a type hivekeeper does not
// apply, a config that is missing or not valid) leaves out only that
// backend, with ToolHive's condition and one Warning event; the others
// are served. The config's appearance re-syncs the vMCP and serves it.
func TestBackendAuthDropsOnlyThatBackend(t *testing.T) {
	bearer := newExtAuth("bearer", func(s *thv1.MCPExternalAuthConfigSpec) { s.Type = thv1.ExternalAuthTypeBearerToken })
	invalid := newExtAuth("broken", headerInjection)
	invalid.Status.Conditions = []metav1.Condition{{Type: thv1.ConditionValid, Status: metav1.ConditionFalse, Reason: "InvalidConfig",
		Message: "bad", LastTransitionTime: metav1.NewTime(toolhivetest.Now)}}
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Backends: map[string]thv1.BackendAuth{"inline-bad": {Type: thv1.BackendAuthTypeExternalAuthConfigRef,
			ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "bearer"}}}}
	}, inline), toolhivetest.NewGroup(testNS, testGroup), bearer, invalid,
		newMember("bearer-member", testGroup, withAuthRef("bearer")), newMember("missing", testGroup, withAuthRef("later")),
		newMember("invalid", testGroup, withAuthRef("broken")), newMember("inline-bad", testGroup), newMember("fine", testGroup))
	f.converge("agg")
	if got := backendNames(configOf(t, f)); !slices.Equal(got, []string{"fine"}) {
		t.Fatalf("backends %v, want only fine", got)
	}
	conds := f.get("agg").Status.Conditions
	for typ, reason := range map[string]string{"DiscoveredAuthConfig-bearer-member": "ConversionFailed", "DiscoveredAuthConfig-missing": "ConversionFailed",
		"DiscoveredAuthConfig-invalid": "InvalidConfig", "BackendAuthConfig-inline-bad": "ConversionFailed"} {
		c := meta.FindStatusCondition(conds, typ)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
			t.Errorf("%s: %+v, want False %s", typ, c, reason)
		}
	}
	if v := f.get("agg"); v.Status.Phase == thv1.VirtualMCPServerPhaseFailed {
		t.Errorf("the vMCP failed instead of serving the other backend: %s", v.Status.Message)
	}
	events := strings.Join(f.Events(), "\n")
	for _, name := range []string{"bearer-member", "missing", "invalid", "inline-bad"} {
		if strings.Count(events, "backend "+name+" ") != 1 {
			t.Errorf("want one Warning event naming %s, got:\n%s", name, events)
		}
	}

	later := newExtAuth("later", tokenExchange)
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(testNS).Create(context.Background(), later, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	drainQueue(f)
	f.c.memberAuthChanged(later)
	if keys := drainQueue(f); !slices.Equal(keys, []string{testNS + "/agg"}) {
		t.Fatalf("the config's creation enqueued %v", keys)
	}
	acts, _ := f.sync("agg")
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments", "patch virtualmcpservers/status")
	if got := backendNames(configOf(t, f)); !slices.Equal(got, []string{"fine", "missing"}) {
		t.Errorf("backends %v, want fine and missing", got)
	}
	if !meta.IsStatusConditionTrue(f.get("agg").Status.Conditions, "DiscoveredAuthConfig-missing") {
		t.Error("DiscoveredAuthConfig-missing is not True")
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("converged: %s", wt.Describe(acts))
	}
}

// Conditions of strategies no longer asked for go.
func TestStaleAuthConditionsGo(t *testing.T) {
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Default: &thv1.BackendAuth{Type: thv1.BackendAuthTypeDiscovered},
			Backends: map[string]thv1.BackendAuth{"a": {Type: thv1.BackendAuthTypeDiscovered}}}
	}, inline), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	for _, typ := range []string{"DefaultAuthConfig", "BackendAuthConfig-a"} {
		if !meta.IsStatusConditionTrue(f.get("agg").Status.Conditions, typ) {
			t.Fatalf("%s not True", typ)
		}
	}
	f.update("agg", func(v *thv1.VirtualMCPServer) { v.Spec.OutgoingAuth = nil })
	f.converge("agg")
	for _, c := range f.get("agg").Status.Conditions {
		if strings.Contains(c.Type, "AuthConfig") && c.Type != thv1.ConditionAuthConfigured {
			t.Errorf("stale condition %s", c.Type)
		}
	}
}

// ToolHive v0.63.0 leaves a backend's phase out of config.yaml (v0.47.0
// wrote it as workload_status): in inline mode a member going from
// Pending to Ready and to Failed is no write at all, so no vMCP pod
// restarts for a backend's runtime state.
func TestMemberPhaseIsNotBackendMetadata(t *testing.T) {
	f := newFixture(t, newVMCP("agg", inline), toolhivetest.NewGroup(testNS, testGroup),
		newMember("a", testGroup, func(s *thv1.MCPServer) { s.Status.Phase = thv1.MCPServerPhasePending }))
	f.converge("agg")
	if cfg := configOfRaw(t, f); !strings.Contains(cfg, "workload_type") || strings.Contains(cfg, "workload_status") {
		t.Fatalf("config.yaml's backend metadata:\n%s", cfg)
	}
	for _, phase := range []string{thv1.MCPServerPhaseReady, thv1.MCPServerPhaseFailed} {
		s, err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Status.Phase = phase
		if _, err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).UpdateStatus(context.Background(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.Refresh()
		if acts, _ := f.sync("agg"); len(acts) != 0 {
			t.Fatalf("member phase %s: %s", phase, wt.Describe(acts))
		}
	}
}
