package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// authzFileCM is a user's ConfigMap holding an authorization file.
func authzFileCM(rv, file string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "policies", ResourceVersion: rv},
		Data: map[string]string{"authz.yaml": file}}
}

// withAuthzConfigMap authorizes from key authz.yaml of ConfigMap
// "policies", with a group claim of the spec's own.
func withAuthzConfigMap(s *thv1.MCPServer) {
	s.Spec.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap, GroupClaimName: "teams",
		ConfigMap: &thv1.ConfigMapAuthzRef{Name: "policies", Key: "authz.yaml"}}
}

// configMapGets counts the reads of ConfigMap "policies" from the API
// server since the last Refresh.
func configMapGets(f *fixture) int {
	n := 0
	for _, a := range f.kube.Actions() {
		if g, ok := a.(core.GetAction); ok && g.GetResource().Resource == "configmaps" && g.GetName() == "policies" {
			n++
		}
	}
	return n
}

// runConfigAuthz is the RunConfig's authz_config, compacted.
func runConfigAuthz(t *testing.T, f *fixture) string {
	t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Authz json.RawMessage `json:"authz_config"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, rc.Authz); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Authorization from a ConfigMap, as ToolHive's operator deploys it: the
// file (YAML here) becomes the RunConfig's authz_config as JSON, the
// spec's group claim over the file's, and the ConfigMap's key is mounted
// at /etc/toolhive/authz/authz.json. The file is read from the API server
// once per version of the ConfigMap: a converged server reads nothing, a
// new version is read once and rolls the RunConfig.
func TestAuthzFromConfigMap(t *testing.T) {
	const file = "version: \"1.0\"\ntype: cedarv1\ncedar:\n  policies: ['permit(principal, action, resource);']\n  group_claim_name: groups\n"
	cm := authzFileCM("5", file)
	f := newFixture(t, newServer("fetch", withAuthzConfigMap), cm)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	if n := configMapGets(f); n != 1 {
		t.Errorf("%d reads of the ConfigMap on the first sync, want 1", n)
	}
	assertActions(t, acts, "create serviceaccounts", "create rolebindings", "create serviceaccounts", "create configmaps", "create services", "create deployments", "patch mcpservers/status")
	const want = `{"version":"1.0","type":"cedarv1","cedar":{"policies":["permit(principal, action, resource);"],"entities_json":"","group_claim_name":"teams"}}`
	if got := runConfigAuthz(t, f); got != want {
		t.Errorf("authz_config %s\nwant %s", got, want)
	}
	dep, err := f.kube.AppsV1().Deployments(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vol := corev1.Volume{Name: "authz-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "policies"}, Items: []corev1.KeyToPath{{Key: "authz.yaml", Path: "authz.json"}}}}}
	if !containsVolume(dep.Spec.Template.Spec.Volumes, vol) {
		t.Errorf("volumes %+v lack %+v", dep.Spec.Template.Spec.Volumes, vol)
	}
	mount := corev1.VolumeMount{Name: "authz-config", MountPath: "/etc/toolhive/authz", ReadOnly: true}
	if c := dep.Spec.Template.Spec.Containers[0]; !containsMount(c.VolumeMounts, mount) {
		t.Errorf("mounts %+v lack %+v", c.VolumeMounts, mount)
	}

	f.applyServerBehaviour()
	f.refresh()
	f.converge("fetch")
	f.refresh()
	if acts, _ := f.sync("fetch"); len(acts) != 0 || configMapGets(f) != 0 {
		t.Fatalf("converged: %s, %d reads", wt.Describe(acts), configMapGets(f))
	}

	changed := authzFileCM("6", file+"  role_claim_name: roles\n")
	if _, err := f.kube.CoreV1().ConfigMaps(testNS).Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	acts, err = f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	if n := configMapGets(f); n != 1 {
		t.Errorf("%d reads of the new version, want 1", n)
	}
	assertActions(t, acts, "patch configmaps", "patch deployments")
	const wantChanged = `{"version":"1.0","type":"cedarv1","cedar":{"policies":["permit(principal, action, resource);"],"entities_json":"","group_claim_name":"teams","role_claim_name":"roles"}}`
	if got := runConfigAuthz(t, f); got != wantChanged {
		t.Errorf("authz_config %s\nwant %s", got, wantChanged)
	}
}

// A ConfigMap that is missing, lacks its key or holds a file the runner
// would not load fails the server with ToolHive's reason and words, and
// nothing is written; the ConfigMap's events re-sync it (by the reference
// index: other ConfigMaps and a resync enqueue nothing).
func TestAuthzConfigMapProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cm     *corev1.ConfigMap
		reason string
		msg    string
	}{
		{"missing", nil, thv1.ReasonAuthzConfigMapNotFound,
			`Failed to build configuration: failed to create RunConfig from MCPServer: failed to process AuthzConfig: failed to get Authz ConfigMap team-a/policies: ConfigMap "policies" not found`},
		{"no key", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "policies"}, Data: map[string]string{"authz.json": "{}"}},
			thv1.ReasonAuthzConfigMapInvalid, `Failed to build configuration: failed to create RunConfig from MCPServer: failed to process AuthzConfig: authz ConfigMap team-a/policies is missing key "authz.yaml"`},
		{"no policy", authzFileCM("3", `{"version":"1.0","type":"cedarv1","cedar":{"policies":[]}}`), thv1.ReasonAuthzConfigMapInvalid,
			`Failed to build configuration: failed to create RunConfig from MCPServer: failed to process AuthzConfig: invalid authz config from ConfigMap team-a/policies key "authz.yaml": invalid cedarv1 configuration: at least one policy is required for Cedar authorization`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{newServer("fetch", withAuthzConfigMap)}
			if tc.cm != nil {
				objs = append(objs, tc.cm)
			}
			f := newFixture(t, objs...)
			acts, err := f.sync("fetch")
			if err != nil {
				t.Fatal(err)
			}
			assertActions(t, acts, "patch mcpservers/status")
			got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady)
			if got.Status.Phase != thv1.MCPServerPhaseFailed || c == nil || c.Reason != thv1.ReasonNotReady || c.Message != tc.msg {
				t.Errorf("status %s %+v, want Failed with %q", got.Status.Phase, c, tc.msg)
			}
			if ev := f.Events(); len(ev) != 1 || ev[0] != "Warning "+tc.reason+" "+tc.msg {
				t.Errorf("events %q", ev)
			}
		})
	}

	f := newFixture(t, newServer("fetch", withAuthzConfigMap))
	wt.Drain(f.c.Queue)
	h := f.c.AuthzFileHandler()
	cm := authzFileCM("1", "x")
	trimmed, _ := framework.TrimForeign(cm)
	h.OnAdd(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "other"}}, false)
	h.OnUpdate(trimmed, trimmed)
	if n := len(wt.Drain(f.c.Queue)); n != 0 {
		t.Errorf("an unrelated ConfigMap or a resync enqueued %d", n)
	}
	for _, ev := range []func(){
		func() { h.OnAdd(trimmed, false) },
		func() { newer := cm.DeepCopy(); newer.ResourceVersion = "2"; h.OnUpdate(cm, newer) },
		func() { h.OnDelete(cm) },
	} {
		ev()
		if got := wt.Drain(f.c.Queue); !reflect.DeepEqual(got, []string{testNS + "/fetch"}) {
			t.Errorf("enqueued %v", got)
		}
	}
}

func containsVolume(vs []corev1.Volume, v corev1.Volume) bool {
	for _, x := range vs {
		if reflect.DeepEqual(x, v) {
			return true
		}
	}
	return false
}

func containsMount(ms []corev1.VolumeMount, m corev1.VolumeMount) bool {
	for _, x := range ms {
		if reflect.DeepEqual(x, m) {
			return true
		}
	}
	return false
}
