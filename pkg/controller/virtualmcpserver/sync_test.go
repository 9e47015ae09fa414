package virtualmcpserver

import (
	"context"
	"encoding/base64"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

func TestCreateThenSteadyStateMakesNoWrites(t *testing.T) {
	v := newVMCP("agg", withOIDC("auth"), withPodTemplate(userVolumesTemplate))
	f := newFixture(t, v, newOIDCConfig("auth", "idp-ca"), toolhivetest.NewGroup(testNS, testGroup),
		newMember("b", testGroup), newMember("a", testGroup), newMember("loner", ""))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create secrets", "create serviceaccounts", "create rolebindings", "create configmaps",
		"create services", "create deployments", "patch virtualmcpservers/status")
	wt.AssertNoActionOn(t, acts, "mcpoidcconfigs")
	wt.AssertNoActionOn(t, acts, "mcpservers")
	wt.AssertNoActionOn(t, acts, "mcpgroups")

	// The server defaults everything (defaultMode 420 on every volume among
	// it), other controllers annotate; the next rounds write nothing.
	f.ApplyServerBehaviour()
	f.Refresh()
	before := testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues(Name, "deployments"))
	for i := range 3 {
		acts, err = f.sync("agg")
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 0 {
			t.Fatalf("round %d of a converged server wrote: %s", i, wt.Describe(acts))
		}
	}
	if after := testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues(Name, "deployments")); after != before {
		t.Errorf("churn moved at steady state: %v -> %v", before, after)
	}
}

func TestChildrenShape(t *testing.T) {
	v := newVMCP("agg", withOIDC("auth"), inline, func(v *thv1.VirtualMCPServer) {
		v.Spec.ServiceType = thv1.ServiceTypeLoadBalancer
		v.Spec.SessionAffinity = thv1.SessionAffinityNone
		v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](`{"aggregation":{"conflictResolution":"prefix"},` +
			`"incomingAuth":{"type":"anonymous","authz":{"type":"cedar"}},"outgoingAuth":{"source":"discovered"},"backends":[{"name":"injected"}],` +
			`"telemetry":{"endpoint":"ignored:4317"},"optimizer":{"maxToolsToReturn":9007199254740993}}`)
	})
	f := newFixture(t, v, newOIDCConfig("auth", "idp-ca"), toolhivetest.NewGroup(testNS, testGroup),
		newMember("zeta", testGroup), newMember("alpha", testGroup, func(s *thv1.MCPServer) {
			s.Spec.Transport = thv1.TransportSSE
			s.Spec.ProxyPort = 9090
		}), newMember("loner", ""), newMember("other-group", "elsewhere"))
	f.converge("agg")
	ctx := context.Background()

	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw := cm.Data[naming.VMCPConfigKey]
	var cfg struct {
		Name         string                   `json:"name"`
		GroupRef     string                   `json:"groupRef"`
		Backends     []thv1.VMCPStaticBackend `json:"backends"`
		Aggregation  map[string]any           `json:"aggregation"`
		IncomingAuth struct {
			Type  string         `json:"type"`
			Authz map[string]any `json:"authz"`
			OIDC  thv1.VMCPOIDC  `json:"oidc"`
		} `json:"incomingAuth"`
	}
	if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("config.yaml does not parse: %v\n%s", err, raw)
	}
	md := map[string]string{"group": testGroup, "namespace": testNS, "tool_type": "mcp", "workload_type": "mcp_server"}
	wantBackends := []thv1.VMCPStaticBackend{
		{Name: "alpha", URL: "http://mcp-alpha-proxy.team-a.svc.cluster.local:9090/sse", Transport: thv1.TransportSSE, Metadata: md},
		{Name: "zeta", URL: "http://mcp-zeta-proxy.team-a.svc.cluster.local:8080/mcp", Transport: thv1.TransportStreamableHTTP, Metadata: md},
	}
	if cfg.Name != "agg" || cfg.GroupRef != testGroup || !reflect.DeepEqual(cfg.Backends, wantBackends) {
		t.Errorf("config name %q group %q backends %+v\n%s", cfg.Name, cfg.GroupRef, cfg.Backends, raw)
	}
	// As in ToolHive's operator, incomingAuth, outgoingAuth and telemetry
	// are built from the spec's own fields, never read from spec.config.
	if cfg.Aggregation["conflictResolution"] != "prefix" || cfg.IncomingAuth.Authz != nil || strings.Contains(raw, "ignored:4317") {
		t.Errorf("spec.config's incomingAuth or telemetry were read:\n%s", raw)
	}
	// Sections vmcp requires are defaulted.
	if !strings.Contains(raw, "prefixFormat: '{workload}_'") || !strings.Contains(raw, "source: inline") || !strings.Contains(raw, "partialFailureMode: fail") {
		t.Errorf("defaults missing:\n%s", raw)
	}
	o := cfg.IncomingAuth.OIDC
	if cfg.IncomingAuth.Type != thv1.IncomingAuthOIDC || o.Issuer != "https://idp.example.com" || o.Audience != "vmcp" ||
		o.ClientID != "hive" || o.ClientSecretEnv != naming.EnvVMCPOIDCClientSecret || o.Resource != "http://agg.team-a.svc.cluster.local:4483" || o.CABundlePath != "/config/certs/idp-ca/ca.crt" ||
		!slices.Equal(o.Scopes, []string{"openid"}) {
		t.Errorf("incomingAuth %+v\n%s", cfg.IncomingAuth, raw)
	}
	if !strings.Contains(raw, "9007199254740993") {
		t.Errorf("a large integer of spec.config was rounded:\n%s", raw)
	}
	if strings.Contains(raw, "clientSecretRef") || strings.Contains(raw, "name: idp\n") {
		t.Errorf("a secret reference reached the ConfigMap:\n%s", raw)
	}

	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	// The container as ToolHive's operator builds it.
	if len(pod.Containers) != 1 || c.Name != naming.VMCPContainerName || c.Image != testImage || c.ImagePullPolicy != corev1.PullIfNotPresent ||
		!slices.Equal(c.Args, []string{"serve", "--config=/etc/vmcp-config/config.yaml", "--host=0.0.0.0", "--port=4483"}) ||
		c.Ports[0].ContainerPort != 4483 || c.Ports[0].Name != "http" || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe.HTTPGet.Path != "/health" || c.LivenessProbe.TimeoutSeconds != 5 || c.ReadinessProbe.InitialDelaySeconds != 15 ||
		c.Resources.Limits.Memory().String() != "512Mi" || c.Resources.Requests.Cpu().String() != "100m" ||
		ptr.Deref(pod.TerminationGracePeriodSeconds, 0) != 30 {
		t.Errorf("container %+v", c)
	}
	if sc := c.SecurityContext; !ptr.Deref(sc.RunAsNonRoot, false) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
		ptr.Deref(sc.Privileged, true) {
		t.Errorf("security context %+v", sc)
	}
	var env []string
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			env = append(env, e.Name+"<-"+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
		} else {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	if want := []string{"VMCP_NAME=agg", "VMCP_NAMESPACE=" + testNS, "VMCP_OIDC_CLIENT_SECRET<-idp/secret",
		"VMCP_SESSION_HMAC_SECRET<-agg-hmac-secret/hmac-secret", "XDG_CONFIG_HOME=/tmp", "HOME=/tmp", "TOOLHIVE_RUNTIME=kubernetes",
		"UNSTRUCTURED_LOGS=false"}; !slices.Equal(env, want) {
		t.Errorf("env\n got %q\nwant %q", env, want)
	}
	var vols []string
	for _, vol := range pod.Volumes {
		vols = append(vols, vol.Name)
	}
	if !slices.Equal(vols, []string{naming.VMCPConfigVolume, "oidc-ca-bundle-idp-ca"}) || c.VolumeMounts[1].MountPath != "/config/certs/idp-ca" {
		t.Errorf("volumes %v mounts %+v", vols, c.VolumeMounts)
	}
	if len(dep.Annotations[naming.AnnotationPodVolumesHash]) != 64 {
		t.Errorf("podvolumes hash %q", dep.Annotations[naming.AnnotationPodVolumesHash])
	}
	if dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] != cm.Annotations[schema.ChecksumAnnotation] {
		t.Errorf("template annotations %v", dep.Spec.Template.Annotations)
	}
	if pod.ServiceAccountName != "agg-vmcp" {
		t.Errorf("serviceAccountName %s", pod.ServiceAccountName)
	}
	if _, err := f.Kube.CoreV1().ServiceAccounts(testNS).Get(ctx, "agg-vmcp", metav1.GetOptions{}); err != nil {
		t.Errorf("service account: %v", err)
	}
	// Inline mode: vmcp reads its own VirtualMCPServer and writes its
	// status, nothing else.
	rb, err := f.Kube.RbacV1().RoleBindings(testNS).Get(ctx, "agg-vmcp", metav1.GetOptions{})
	if err != nil || rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != rbac.DefaultVMCPInlineClusterRole || rb.Subjects[0].Name != "agg-vmcp" {
		t.Errorf("role binding %+v: %v", rb, err)
	}
	hmac, err := f.Kube.CoreV1().Secrets(testNS).Get(ctx, "agg-hmac-secret", metav1.GetOptions{})
	if key, _ := base64.StdEncoding.DecodeString(string(hmac.Data["hmac-secret"])); err != nil || len(key) != 32 ||
		hmac.Labels["app.kubernetes.io/component"] != "session-security" || !metav1.IsControlledBy(hmac, f.get("agg")) {
		t.Errorf("HMAC secret %+v: %v", hmac, err)
	}
	svc, err := f.Kube.CoreV1().Services(testNS).Get(ctx, "vmcp-agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.Ports[0].Port != 4483 || svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("service %+v", svc.Spec)
	}

	got := f.get("agg")
	if got.Status.URL != "http://vmcp-agg.team-a.svc.cluster.local:4483" || got.Status.OIDCConfigHash != "hash-auth" ||
		got.Status.Phase != thv1.VirtualMCPServerPhasePending || got.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", got.Status)
	}
	for _, ct := range []string{thv1.ConditionOIDCConfigRefValidated, thv1.ConditionGroupRefValidated, thv1.ConditionPodTemplateValid} {
		if !meta.IsStatusConditionTrue(got.Status.Conditions, ct) {
			t.Errorf("%s not True: %+v", ct, got.Status.Conditions)
		}
	}
}

func TestCustomServiceAccountCreatesNone(t *testing.T) {
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) { v.Spec.ServiceAccount = ptr.To("mine") }), toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create secrets", "create configmaps", "create services", "create deployments", "patch virtualmcpservers/status")
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "agg", metav1.GetOptions{})
	if dep.Spec.Template.Spec.ServiceAccountName != "mine" {
		t.Errorf("serviceAccountName %s", dep.Spec.Template.Spec.ServiceAccountName)
	}
	// The config volume alone is hashed too, as ToolHive's operator does.
	if len(dep.Annotations[naming.AnnotationPodVolumesHash]) != 64 {
		t.Errorf("pod volumes hash of a pod with only its config volume: %v", dep.Annotations)
	}
}

// deploymentPatch returns the one Deployment patch among acts.
func deploymentPatch(t *testing.T, acts []core.Action) map[string]any {
	t.Helper()
	var found []core.Action
	for _, a := range acts {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "deployments" {
			found = append(found, a)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one Deployment patch, got %s", wt.Describe(acts))
	}
	return wt.PatchBody(t, found[0])
}

func annotationsOf(body map[string]any) map[string]any {
	md, _ := body["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann
}

// A change of the CA bundle behind the OIDC reference is a volume-only
// change: one Deployment patch with the new volume and a new hash, then
// nothing.
func TestCABundleChangeRollsOnce(t *testing.T) {
	cfg := newOIDCConfig("auth", "ca-one")
	f := newFixture(t, newVMCP("agg", withOIDC("auth")), cfg, toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
	f.converge("agg")
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "agg", metav1.GetOptions{})
	oldHash := dep.Annotations[naming.AnnotationPodVolumesHash]

	cfg = cfg.DeepCopy()
	cfg.Spec.Inline.CABundleRef.ConfigMapRef.Name = "ca-two"
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(testNS).Update(context.Background(), cfg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	// The config.yaml names the new CA path too, and CABundleRefValidated
	// names the new ConfigMap.
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments", "patch virtualmcpservers/status")
	body := deploymentPatch(t, acts)
	newHash, _ := annotationsOf(body)[naming.AnnotationPodVolumesHash].(string)
	if newHash == "" || newHash == oldHash {
		t.Fatalf("hash %q -> %q", oldHash, newHash)
	}
	if !strings.Contains(wt.Describe(acts), `"name":"oidc-ca-bundle-ca-two"`) || strings.Contains(wt.Describe(acts), "oidc-ca-bundle-ca-one") {
		t.Errorf("patch does not swap the volume: %s", wt.Describe(acts))
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, _ = f.sync("agg")
	wt.AssertActions(t, acts)
}

// Changing a user volume's source rolls the pod through the template hash; removing
// every other volume leaves the config volume's hash and then converges.
func TestUserVolumeChangesAndRemovalOfEveryVolume(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withOIDC("auth"), withPodTemplate(userVolumesTemplate)),
		newOIDCConfig("auth", "idp-ca"), toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
	f.converge("agg")

	f.update("agg", withPodTemplate(strings.Replace(userVolumesTemplate, "creds-v1", "creds-v2", 1)))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch deployments", "patch virtualmcpservers/status")
	if h, _ := wiring.HashPodTemplateSpec(f.get("agg").Spec.PodTemplateSpec); annotationsOf(deploymentPatch(t, acts))[naming.AnnotationPodTemplateSpecHash] != h {
		t.Fatalf("secret rename does not carry the new template hash: %s", wt.Describe(acts))
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, _ = f.sync("agg")
	wt.AssertActions(t, acts)

	// Anonymous access and no podTemplateSpec: only the config volume is
	// left, and the hash becomes its hash.
	f.update("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.IncomingAuth = thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous}
		v.Spec.PodTemplateSpec = nil
	})
	acts, err = f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	body := deploymentPatch(t, acts)
	ann := annotationsOf(body)
	if v, ok := ann[naming.AnnotationPodVolumesHash].(string); !ok || v == "" {
		t.Fatalf("patch does not carry the config volume's hash: %v", body["metadata"])
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "agg", metav1.GetOptions{})
	if len(dep.Annotations[naming.AnnotationPodVolumesHash]) != 64 || len(dep.Spec.Template.Spec.Volumes) != 1 {
		t.Fatalf("annotations %v volumes %+v", dep.Annotations, dep.Spec.Template.Spec.Volumes)
	}
	for i := range 2 {
		acts, _ = f.sync("agg")
		if len(acts) != 0 {
			t.Fatalf("round %d after removing every other volume wrote: %s", i, wt.Describe(acts))
		}
	}
}

// A volume that cannot be resolved is reported and leaves the live
// Deployment exactly as it is.
func TestUnresolvableVolumeLeavesDeploymentUntouched(t *testing.T) {
	bad := map[string]string{
		"undecodable size limit": `{"spec":{"volumes":[{"name":"scratch","emptyDir":{"sizeLimit":"lots"}}]}}`,
		"volumes not a list":     `{"spec":{"volumes":{"name":"x"}}}`,
		"mount of no volume":     `{"spec":{"containers":[{"name":"vmcp","volumeMounts":[{"name":"ghost","mountPath":"/g"}]}]}}`,
		"shadows config volume":  `{"spec":{"volumes":[{"name":"vmcp-config","emptyDir":{}}]}}`,
		"volume with no source":  `{"spec":{"volumes":[{"name":"empty"}]}}`,
	}
	for name, raw := range bad {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, newVMCP("agg", withOIDC("auth")), newOIDCConfig("auth", "idp-ca"), toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
			f.converge("agg")
			f.update("agg", withPodTemplate(raw))
			acts, err := f.sync("agg")
			if err != nil {
				t.Fatalf("invalid input must not be retried: %v", err)
			}
			wt.AssertActions(t, acts, "patch virtualmcpservers/status")
			got := f.get("agg")
			cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionPodTemplateValid)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != thv1.ReasonPodTemplateInvalid || got.Status.Phase != thv1.VirtualMCPServerPhaseFailed {
				t.Fatalf("status %+v", got.Status)
			}
			if evs := f.Warnings(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonPodTemplateInvalid) {
				t.Fatalf("events %v", evs)
			}
			f.Refresh()
			acts, _ = f.sync("agg")
			if len(acts) != 0 || len(f.Events()) != 0 {
				t.Fatalf("second sync: %s", wt.Describe(acts))
			}
		})
	}
}

func TestInvalidConfigIsAConditionNotARetry(t *testing.T) {
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](`{"operational":{"timeouts":{"default":"soon"}}}`)
	}),
		toolhivetest.NewGroup(testNS, testGroup))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	cond := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionReady)
	if cond == nil || cond.Reason != thv1.ReasonInvalidConfig {
		t.Fatalf("Ready %+v", cond)
	}
	// ToolHive's Valid condition says it too.
	if v := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionValid); v == nil || v.Status != metav1.ConditionFalse ||
		v.Reason != thv1.ReasonValidationFailed || !strings.HasPrefix(v.Message, "spec.config: ") {
		t.Fatalf("Valid %+v", v)
	}
}

// A missing group makes the vMCP Failed, as ToolHive's operator reports
// it, with nothing written but its status and no URL; it converges once
// the group appears.
func TestMissingGroupIsReportedThenConverges(t *testing.T) {
	f := newFixture(t, newVMCP("agg"), newMember("a", testGroup))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	got := f.get("agg")
	cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionGroupRefValidated)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != thv1.ReasonGroupRefNotFound {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	want := "Referenced MCPGroup " + testGroup + " not found"
	if got.Status.Phase != thv1.VirtualMCPServerPhaseFailed || got.Status.Message != want || got.Status.URL != "" {
		t.Fatalf("phase %q message %q URL %q; want Failed %q and no URL", got.Status.Phase, got.Status.Message, got.Status.URL, want)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonGroupRefNotFound+" "+want) {
		t.Fatalf("events %q", evs)
	}
	f.Refresh()
	if acts, err := f.sync("agg"); err != nil || len(acts) != 0 {
		t.Fatalf("second sync: %v %s", err, wt.Describe(acts))
	}

	group := toolhivetest.NewGroup(testNS, testGroup)
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPGroups(testNS).Create(context.Background(), group, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	// The group's creation is what re-syncs the server.
	f.c.enqueueAggregators(group)
	if key, _ := f.c.Queue.Get(); key.String() != testNS+"/agg" {
		t.Fatalf("enqueued %q", key)
	} else {
		f.c.Queue.Done(key)
	}
	f.converge("agg")
	if !meta.IsStatusConditionTrue(f.get("agg").Status.Conditions, thv1.ConditionGroupRefValidated) {
		t.Fatal("GroupRefValidated not True once the group exists")
	}
	if _, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "agg", metav1.GetOptions{}); err != nil {
		t.Fatalf("not deployed once the group exists: %v", err)
	}
}

// Servers joining or leaving the group re-sync exactly the vMCPs that
// aggregate it; their status writes re-sync nothing.
func TestMembershipChangesEnqueueAggregators(t *testing.T) {
	f := newFixture(t, newVMCP("agg"), newVMCP("elsewhere", func(v *thv1.VirtualMCPServer) { v.Spec.GroupRef.Name = "other" }),
		toolhivetest.NewGroup(testNS, testGroup))
	drain := func() []string {
		var keys []string
		for f.c.Queue.Len() > 0 {
			k, _ := f.c.Queue.Get()
			keys = append(keys, k.String())
			f.c.Queue.Done(k)
		}
		slices.Sort(keys)
		return keys
	}
	joined := newMember("s", testGroup)
	f.c.memberChanged(joined)
	if keys := drain(); !slices.Equal(keys, []string{testNS + "/agg"}) {
		t.Fatalf("join enqueued %v", keys)
	}
	statusOnly := joined.DeepCopy()
	statusOnly.Status.Phase = thv1.MCPServerPhaseReady
	statusOnly.ResourceVersion = "2"
	f.c.memberUpdated(joined, statusOnly)
	if keys := drain(); len(keys) != 0 {
		t.Fatalf("a status write enqueued %v", keys)
	}
	moved := joined.DeepCopy()
	moved.Spec.GroupRef.Name = "other"
	f.c.memberUpdated(joined, moved)
	if keys := drain(); !slices.Equal(keys, []string{testNS + "/agg", testNS + "/elsewhere"}) {
		t.Fatalf("a move enqueued %v", keys)
	}
	ported := joined.DeepCopy()
	ported.Spec.ProxyPort = 9999
	f.c.memberUpdated(joined, ported)
	if keys := drain(); !slices.Equal(keys, []string{testNS + "/agg"}) {
		t.Fatalf("a port change enqueued %v", keys)
	}
}

// In discovered mode (ToolHive's default) a member joining or leaving is
// no write at all: vmcp lists the group's members itself, so neither
// config.yaml nor the Deployment changes and no pod restarts.
func TestMembershipInDiscoveredModeWritesNothing(t *testing.T) {
	f := newFixture(t, newVMCP("agg"), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	if strings.Contains(configOfRaw(t, f), "backends") {
		t.Fatalf("config.yaml lists backends in discovered mode:\n%s", configOfRaw(t, f))
	}
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).Create(context.Background(), newMember("b", testGroup), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts)
	if err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err = f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts)
}

// configOfRaw is the live config.yaml of agg.
func configOfRaw(t *testing.T, f *fixture) string {
	t.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.VMCPConfigMapName("agg"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data[naming.VMCPConfigKey]
}

// In inline mode a new member reaches config.yaml and rolls the vMCP (the
// config checksum), and nothing else.
func TestNewMemberUpdatesConfig(t *testing.T) {
	f := newFixture(t, newVMCP("agg", inline), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPServers(testNS).Create(context.Background(), newMember("b", testGroup), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	if !strings.Contains(wt.Describe(acts[:1]), "mcp-b-proxy.team-a.svc.cluster.local:8080") {
		t.Errorf("config patch lacks the new backend: %s", wt.Describe(acts))
	}
}

func TestWaitsForOIDCConfig(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withOIDC("missing")), toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	got := f.get("agg")
	if cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionOIDCConfigRefValidated); cond == nil || cond.Reason != thv1.ReasonOIDCConfigRefNotFound {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	if got.Status.Phase != thv1.VirtualMCPServerPhasePending {
		t.Errorf("phase %s", got.Status.Phase)
	}
}

func TestPhaseFromDeployment(t *testing.T) {
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) { v.Spec.Replicas = ptr.To[int32](2) }), toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
	f.converge("agg")
	ctx := context.Background()
	setReady := func(n int32) {
		dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
		dep = dep.DeepCopy()
		dep.Status.ReadyReplicas = n
		if _, err := f.Kube.AppsV1().Deployments(testNS).UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.Refresh()
		if _, err := f.sync("agg"); err != nil {
			t.Fatal(err)
		}
	}
	setReady(1)
	if got := f.get("agg").Status; got.Phase != thv1.VirtualMCPServerPhaseDegraded {
		t.Errorf("1 of 2 ready: phase %s", got.Phase)
	}
	setReady(2)
	got := f.get("agg").Status
	if got.Phase != thv1.VirtualMCPServerPhaseReady || !meta.IsStatusConditionTrue(got.Conditions, thv1.ConditionReady) {
		t.Errorf("2 of 2 ready: %+v", got)
	}
}

// In inline mode an empty group deploys nothing: vmcp given no backends
// would switch to discovering them through the Kubernetes API, which its
// role does not allow. The status says why, and a steady state writes
// nothing. In discovered mode the vMCP is deployed and serves the members
// as they come.
func TestEmptyGroupDeploysNothing(t *testing.T) {
	f := newFixture(t, newVMCP("agg", inline), newVMCP("disc"), toolhivetest.NewGroup(testNS, testGroup), newMember("elsewhere", "other"))
	acts, err := f.sync("disc")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create secrets", "create serviceaccounts", "create rolebindings", "create configmaps",
		"create services", "create deployments", "patch virtualmcpservers/status")
	f.Refresh()
	acts, err = f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	v := f.get("agg")
	c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionReady)
	if v.Status.Phase != thv1.VirtualMCPServerPhasePending || c == nil || c.Reason != thv1.ReasonNoBackends {
		t.Fatalf("status %+v", v.Status)
	}
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("steady state wrote: %s", wt.Describe(acts))
	}
}

// Naming an account hivekeeper manages for another workload (here an
// MCPServer's backend account) is refused with a condition and one event;
// the running Deployment is not touched.
func TestServiceAccountOfAnotherWorkloadIsRefused(t *testing.T) {
	f := newFixture(t, newVMCP("agg"), toolhivetest.NewGroup(testNS, testGroup), toolhivetest.ManagedServiceAccount(testNS, "fetch-sa", thv1.KindMCPServer, "fetch"))
	f.converge("agg")
	f.Events()
	f.update("agg", func(v *thv1.VirtualMCPServer) { v.Spec.ServiceAccount = ptr.To("fetch-sa") })
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatalf("a refusal is not retried: %v", err)
	}
	f.AssertRefusedServiceAccount(t, acts, "virtualmcpservers", f.get("agg").Status.Conditions)

	// Its own account, which hivekeeper created, is fine.
	f.update("agg", func(v *thv1.VirtualMCPServer) { v.Spec.ServiceAccount = ptr.To(naming.VMCPServiceAccountName("agg")) })
	acts, _ = f.sync("agg")
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
}

// Every pod field of the spec reaches the Deployment as ToolHive's operator
// puts it there, and a converged server costs no write.
func TestPodFieldsReachTheDeployment(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withRedis, withPodTemplate(fullTemplate), func(v *thv1.VirtualMCPServer) {
		v.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "spec-pull"}}
	}), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	if got := pod.ImagePullSecrets; len(got) != 2 || got[0].Name != "tpl-pull" && got[1].Name != "tpl-pull" {
		t.Errorf("imagePullSecrets %v, want spec-pull and tpl-pull", got)
	}
	if pod.NodeSelector["disk"] != "ssd" || len(pod.Tolerations) != 1 || pod.PriorityClassName != "high" || len(pod.InitContainers) != 1 {
		t.Errorf("template scheduling and init container not merged: %+v", pod)
	}
	if dep.Spec.Template.Labels["team"] != "a" || dep.Spec.Template.Annotations["note"] != "x" {
		t.Errorf("template metadata not merged: %+v", dep.Spec.Template.ObjectMeta)
	}
	c := pod.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if r := env[wiring.EnvSessionRedisPassword].ValueFrom; r == nil || r.SecretKeyRef == nil || r.SecretKeyRef.Name != "redis" || r.SecretKeyRef.Key != "password" {
		t.Errorf("redis password env %+v, want a secretKeyRef to redis/password", env[wiring.EnvSessionRedisPassword])
	}
	if env["EXTRA"].Value != "1" || env[naming.EnvVMCPName].Value != "agg" || env[naming.EnvVMCPNamespace].Value != testNS || c.Resources.Limits.Memory().String() != "256Mi" {
		t.Errorf("container env %v resources %v", c.Env, c.Resources)
	}
	if dep.Annotations[naming.AnnotationPodTemplateSpecHash] == "" || dep.Annotations[naming.AnnotationPodVolumesHash] == "" {
		t.Errorf("annotations %v, want both hashes", dep.Annotations)
	}
	cm, _ := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.VMCPConfigMapName("agg"), metav1.GetOptions{})
	if cfg := cm.Data[naming.VMCPConfigKey]; !strings.Contains(cfg, "sessionStorage:\n    provider: redis\n    address: redis:6379\n    db: 2\n    keyPrefix: 'vmcp:'\n") || strings.Contains(cfg, "password") {
		t.Errorf("config.yaml session storage:\n%s", cfg)
	}
	for i := range 2 {
		if acts, _ := f.sync("agg"); len(acts) != 0 {
			t.Fatalf("round %d of a converged server wrote: %s", i, wt.Describe(acts))
		}
	}
	// Dropping the template and the pull secrets removes what they set.
	f.update("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.PodTemplateSpec, v.Spec.ImagePullSecrets, v.Spec.SessionStorage = nil, nil, nil
	})
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments", "patch virtualmcpservers/status")
	f.ApplyServerBehaviour()
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("after dropping the template: %s", wt.Describe(acts))
	}
}

// MCPRemoteProxies of the group are backends at their status URL; a proxy
// joining, changing its URL or leaving updates config.yaml and rolls the
// vMCP once, and its status writes enqueue nothing.
func TestRemoteProxyMembersAreBackends(t *testing.T) {
	f := newFixture(t, newVMCP("agg", inline), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	rp := newRemoteMember("r", testGroup)
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(testNS).Create(context.Background(), rp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	if !strings.Contains(wt.Describe(acts[:1]), "http://mcp-r-remote-proxy.team-a.svc.cluster.local:8080/mcp") {
		t.Errorf("config patch lacks the remote proxy: %s", wt.Describe(acts))
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("converged: %s", wt.Describe(acts))
	}

	drain := func() int {
		n := 0
		for f.c.Queue.Len() > 0 {
			k, _ := f.c.Queue.Get()
			f.c.Queue.Done(k)
			n++
		}
		return n
	}
	drain()
	statusOnly := rp.DeepCopy()
	statusOnly.Status.Phase = thv1.MCPRemoteProxyPhaseReady
	if f.c.memberUpdated(rp, statusOnly); drain() != 0 {
		t.Error("a remote proxy's status write enqueued the vMCP")
	}
	sse := rp.DeepCopy()
	sse.Spec.Transport = thv1.TransportSSE
	if f.c.memberUpdated(rp, sse); drain() != 1 {
		t.Error("a remote proxy's transport change did not enqueue the vMCP")
	}
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(testNS).Update(context.Background(), sse, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ = f.sync("agg")
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	if !strings.Contains(wt.Describe(acts[:1]), "mcp-r-remote-proxy.team-a.svc.cluster.local:8080/sse") {
		t.Errorf("config patch lacks the SSE endpoint: %s", wt.Describe(acts))
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	if err := f.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(testNS).Delete(context.Background(), "r", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ = f.sync("agg")
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
}

// ToolHive's advisory SessionStorageWarning is on a vMCP once its incoming
// auth is resolved: several replicas sharing Redis sessions are fine.
func TestSessionStorageWarning(t *testing.T) {
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.Replicas = ptr.To[int32](2)
		v.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379"}
	}), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionSessionStorageWarning)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonSessionStorageConfigured {
		t.Fatalf("SessionStorageWarning = %+v", c)
	}
	if v := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionValid); v == nil || v.Status != metav1.ConditionTrue ||
		v.Reason != thv1.ReasonValidationSucceeded || v.Message != "Spec validation passed" {
		t.Fatalf("Valid %+v", v)
	}
}

// TestBackendHealthFromRuntime: what vmcp reports of its backends
// (status.runtime, written by vmcp) is projected as ToolHive's operator
// projects it — discoveredBackends, backendCount of the routable ones,
// vmcp's conditions other than Ready — and turns a serving vMCP Degraded
// and not Ready while backends are down. Each report costs one status
// patch that leaves status.runtime alone, and nothing after it.
func TestBackendHealthFromRuntime(t *testing.T) {
	f := newFixture(t, newVMCP("agg"), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup), newMember("b", testGroup))
	f.converge("agg")
	ctx := context.Background()
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep = dep.DeepCopy()
	dep.Status.Replicas, dep.Status.ReadyReplicas = 1, 1
	if _, err := f.Kube.AppsV1().Deployments(testNS).UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	f.converge("agg")
	if got := f.get("agg").Status; got.Phase != thv1.VirtualMCPServerPhaseReady {
		t.Fatalf("no report yet: phase %s, want Ready", got.Phase)
	}
	report := func(a, b string, conditions ...metav1.Condition) thv1.VirtualMCPServerStatus {
		t.Helper()
		v := f.get("agg").DeepCopy()
		v.Status.Runtime = &thv1.VirtualMCPServerRuntimeStatus{Phase: "Degraded", Conditions: conditions, DiscoveredBackends: []thv1.DiscoveredBackend{
			{Name: "a", Status: a, URL: "http://mcp-a-proxy.team-a.svc.cluster.local:8080"},
			{Name: "b", Status: b, URL: "http://mcp-b-proxy.team-a.svc.cluster.local:8080"},
		}}
		if _, err := f.Toolhive.ToolhiveV1beta1().VirtualMCPServers(testNS).UpdateStatus(ctx, v, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.Refresh()
		acts, err := f.sync("agg")
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 1 || acts[0].GetSubresource() != "status" {
			t.Fatalf("a report sent %s, want one status patch", wt.Describe(acts))
		}
		if body := wt.PatchBody(t, acts[0]); body["status"].(map[string]any)["runtime"] != nil {
			t.Errorf("the status patch touches vmcp's status.runtime: %v", body)
		}
		f.Refresh()
		if acts, _ := f.sync("agg"); len(acts) != 0 {
			t.Fatalf("after the projection: %s, want no writes", wt.Describe(acts))
		}
		return f.get("agg").Status
	}
	discovered := metav1.Condition{Type: thv1.ConditionBackendsDiscovered, Status: metav1.ConditionTrue, Reason: "BackendsDiscovered", Message: "Discovered 2 backends"}
	degraded := metav1.Condition{Type: thv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "BackendsDegraded", Message: "1 backends degraded"}
	type want struct {
		phase, reason string
		ready         metav1.ConditionStatus
		count         int32
		degraded      bool
	}
	for _, tc := range []struct {
		name       string
		a, b       string
		conditions []metav1.Condition
		want       want
	}{
		{"all down", thv1.BackendStatusUnavailable, thv1.BackendStatusUnavailable, []metav1.Condition{discovered},
			want{thv1.VirtualMCPServerPhaseDegraded, thv1.ReasonBackendsUnavailable, metav1.ConditionFalse, 0, false}},
		{"one degraded", thv1.BackendStatusReady, thv1.BackendStatusDegraded, []metav1.Condition{discovered, degraded},
			want{thv1.VirtualMCPServerPhaseDegraded, thv1.ReasonBackendsDegraded, metav1.ConditionFalse, 1, true}},
		{"all routable", thv1.BackendStatusReady, thv1.BackendStatusUnauthenticated, []metav1.Condition{discovered},
			want{thv1.VirtualMCPServerPhaseReady, thv1.ReasonDeploymentReady, metav1.ConditionTrue, 2, false}},
	} {
		got := report(tc.a, tc.b, tc.conditions...)
		ready := meta.FindStatusCondition(got.Conditions, thv1.ConditionReady)
		if got.Phase != tc.want.phase || ready == nil || ready.Status != tc.want.ready || ready.Reason != tc.want.reason {
			t.Errorf("%s: phase %s, Ready %+v; want %s, %s %s", tc.name, got.Phase, ready, tc.want.phase, tc.want.ready, tc.want.reason)
		}
		if got.BackendCount != tc.want.count || len(got.DiscoveredBackends) != 2 || got.DiscoveredBackends[1].Status != tc.b {
			t.Errorf("%s: backendCount %d, discoveredBackends %+v; want %d and the report's two", tc.name, got.BackendCount, got.DiscoveredBackends, tc.want.count)
		}
		if !meta.IsStatusConditionTrue(got.Conditions, thv1.ConditionBackendsDiscovered) {
			t.Errorf("%s: BackendsDiscovered not projected: %+v", tc.name, got.Conditions)
		}
		if has := meta.FindStatusCondition(got.Conditions, thv1.ConditionDegraded) != nil; has != tc.want.degraded {
			t.Errorf("%s: Degraded condition present %v, want %v", tc.name, has, tc.want.degraded)
		}
	}
}

// TestRuntimeReportResyncs: vmcp's status.runtime write is a status-only
// update that must still re-sync the server; the controller's own status
// writes must not.
func TestRuntimeReportResyncs(t *testing.T) {
	old := newVMCP("agg")
	old.ResourceVersion = "1"
	ours := old.DeepCopy()
	ours.ResourceVersion, ours.Status.Phase = "2", thv1.VirtualMCPServerPhaseReady
	theirs := old.DeepCopy()
	theirs.ResourceVersion, theirs.Status.Runtime = "2", &thv1.VirtualMCPServerRuntimeStatus{Phase: "Ready"}
	if runtimeChanged(old, ours) {
		t.Error("the controller's own status write counts as vmcp's report")
	}
	if !runtimeChanged(old, theirs) {
		t.Error("vmcp's report does not re-sync the server")
	}
}

// TestToolHiveEventsAndConditions: what ToolHive v0.63.0's operator
// reports for a vMCP it deploys — the Normal events of creating the HMAC
// Secret, the Deployment and the Service, once each; DeploymentUpdated
// when a change rolls the Deployment; AuthConfigured and
// CompositeToolRefsValidated True with no composite tool referenced — and
// nothing again at steady state.
func TestToolHiveEventsAndConditions(t *testing.T) {
	f := newFixture(t, newVMCP("agg"), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	want := []string{"Normal HMACSecretCreated", "Normal DeploymentCreated", "Normal ServiceCreated Service vmcp-agg"}
	evs := f.Events()
	if len(evs) != len(want) {
		t.Fatalf("events %q, want %q", evs, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(evs[i], w) {
			t.Errorf("event %d: %q, want %q", i, evs[i], w)
		}
	}
	got := f.get("agg").Status.Conditions
	for _, c := range []struct{ typ, reason string }{
		{thv1.ConditionAuthConfigured, thv1.ReasonAuthValid},
		{thv1.ConditionCompositeToolRefsValidated, thv1.ReasonCompositeToolRefsValid},
	} {
		if cond := meta.FindStatusCondition(got, c.typ); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != c.reason {
			t.Errorf("%s = %+v, want True %s", c.typ, cond, c.reason)
		}
	}
	f.update("agg", func(v *thv1.VirtualMCPServer) { v.Spec.Replicas = ptr.To[int32](3) })
	f.converge("agg")
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal DeploymentUpdated") {
		t.Errorf("a roll recorded %q, want one DeploymentUpdated", evs)
	}
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 || len(f.Events()) != 0 {
		t.Errorf("steady state: %s", wt.Describe(acts))
	}
}
