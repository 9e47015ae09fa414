package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

const (
	testRunner = "registry.example.com/toolhive/proxyrunner:v0.63.0"
	testVMCP   = "registry.example.com/toolhive/vmcp:v0.63.0"
)

// operatorDeployment is ToolHive's operator as its chart installs it,
// kept by Argo CD, with the environment of the chart's defaults but
// mirrored images and usage metrics off.
func operatorDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "toolhive-system", Name: "toolhive-operator",
			Labels: map[string]string{labelManagedBy: "Helm", labelHelmChart: "operator-0.63.0", labelInstance: "toolhive-operator"},
			Annotations: map[string]string{annotationHelmRelease: "toolhive-operator", annotationHelmNamespace: "toolhive-system",
				annotationArgoTracking: "toolhive:apps/Deployment:toolhive-system/toolhive-operator"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "manager", Image: "ghcr.io/stacklok/toolhive/operator:v0.63.0",
			Env: []corev1.EnvVar{
				{Name: "GOMEMLIMIT", Value: "150MiB"},
				{Name: "UNSTRUCTURED_LOGS", Value: "false"},
				{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "TOOLHIVE_RUNNER_IMAGE", Value: testRunner},
				{Name: "VMCP_IMAGE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "operator-images"}, Key: "vmcp"}}},
				{Name: "TOOLHIVE_PROXY_HOST", Value: "0.0.0.0"},
				{Name: "TOOLHIVE_USAGE_METRICS_ENABLED", Value: "false"},
			},
		}}}}},
	}
}

func operatorImages() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "toolhive-system", Name: "operator-images"}, Data: map[string]string{"vmcp": testVMCP}}
}

// crd is a toolhive.stacklok.dev CRD of kind with storedVersions stored.
func crd(plural, kind string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + thv1.GroupName},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: thv1.GroupName, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural}},
		Status:     apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored},
	}
}

// converged returns objs with the children hivekeeper's controllers write
// for them, run with the operator's settings as preflight maps them:
// a cluster hivekeeper (or an operator writing the same) already runs.
func converged(t *testing.T, objs ...runtime.Object) (kube, th []runtime.Object) {
	t.Helper()
	s, err := settingsOf(mustOperator(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := options(s.Flags)
	if err != nil {
		t.Fatal(err)
	}
	seed := &snapshot{live: map[string]runtime.Object{}}
	for _, o := range objs {
		if gvks, _, err := thscheme.Scheme.ObjectKinds(o); err == nil && gvks[0].Group == thv1.GroupName {
			seed.toolhive = append(seed.toolhive, o)
		} else {
			seed.kube = append(seed.kube, o)
		}
	}
	r, err := runControllers(context.Background(), seed, opts, time.Minute, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if !r.settled {
		t.Fatal("the controllers did not settle over the seed")
	}
	snap, err := takeSnapshot(context.Background(), r.kube, r.th, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap.kube, snap.toolhive
}

func mustOperator(t *testing.T) *Operator {
	t.Helper()
	op, err := findOperator(context.Background(), k8sfake.NewClientset(operatorDeployment(), operatorImages()), "", "")
	if err != nil || op == nil {
		t.Fatalf("operator %v, %v", op, err)
	}
	return op
}

// fakeClients are preflight's clients over fakes holding kube and th,
// the operator's Deployment and the CRDs.
func fakeClients(kube, th []runtime.Object, crds ...runtime.Object) clients {
	kube = append(slices.Clone(kube), operatorDeployment(), operatorImages())
	return clients{kube: k8sfake.NewClientset(kube...), toolhive: thfake.NewSimpleClientset(th...), crds: apiextensionsfake.NewSimpleClientset(crds...)}
}

func runPreflight(t *testing.T, c clients) *Report {
	t.Helper()
	r, err := preflight(context.Background(), c, preflightOptions{timeout: time.Minute}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func server() *thv1.MCPServer { return toolhivetest.NewMCPServer("team-a", "fetch") }

// A cluster whose children are already what hivekeeper writes, with the
// operator's settings, switches without a restart, a recreation or a
// rewrite: preflight says so and exits 0.
func TestPreflightPredictsNothingWhenTheChildrenMatch(t *testing.T) {
	kube, th := converged(t, server())
	r := runPreflight(t, fakeClients(kube, th, crd("mcpservers", "MCPServer", "v1beta1")))
	p := r.Prediction
	if !p.Settled || len(p.Restarts)+len(p.Recreated)+len(p.Rewritten)+len(p.Created)+len(p.Deleted)+len(p.Patched) != 0 {
		t.Errorf("prediction over converged children: %+v", p)
	}
	if r.Summary != "0 pods restart, 0 objects recreated, 0 ConfigMaps rewritten" || r.ExitCode != exitOK {
		t.Errorf("summary %q, exit %d, blockers %v", r.Summary, r.ExitCode, r.Blockers)
	}
}

// A Deployment whose pod template differs from what hivekeeper builds is
// a restart: preflight names it, its owner, the comparator's first field
// and both values, and exits 3.
func TestPreflightNamesTheRestartAndTheField(t *testing.T) {
	kube, th := converged(t, server())
	for _, o := range kube {
		if d, ok := o.(*appsv1.Deployment); ok && d.Name == "fetch" {
			d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/toolhive/proxyrunner:v0.62.0"
		}
	}
	r := runPreflight(t, fakeClients(kube, th))
	want := []Restart{{Change: Change{Kind: "Deployment", Namespace: "team-a", Name: "fetch", Owner: "MCPServer fetch",
		Field:  "spec.template.spec.containers.image",
		Detail: `container toolhive: image: "registry.example.com/toolhive/proxyrunner:v0.62.0" → "` + testRunner + `"`}, Replicas: 1}}
	if got := r.Prediction.Restarts; !equalJSON(got, want) {
		t.Errorf("restarts\n got %s\nwant %s", toJSON(got), toJSON(want))
	}
	if r.Summary != "1 pod restarts, 0 objects recreated, 0 ConfigMaps rewritten" || r.ExitCode != exitRestarts {
		t.Errorf("summary %q, exit %d", r.Summary, r.ExitCode)
	}
	var out bytes.Buffer
	if err := r.write(&out, "text"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"ToolHive's operator: Deployment toolhive-system/toolhive-operator, 1 replica",
		"  installed by Helm release toolhive-system/toolhive-operator (chart operator-0.63.0)",
		"  kept by Argo CD Application toolhive: turn its automated sync off",
		"  runnerImage: " + testRunner,
		"  vmcpImage: " + testVMCP,
		"  usageMetrics: false",
		"  not carried over: GOMEMLIMIT",
		"Prediction: 1 pod restarts, 0 objects recreated, 0 ConfigMaps rewritten",
		`  restart Deployment team-a/fetch (MCPServer fetch), 1 pod: spec.template.spec.containers.image: container toolhive: image: "registry.example.com/toolhive/proxyrunner:v0.62.0" → "` + testRunner + `"`,
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("text output lacks %q:\n%s", line, out.String())
		}
	}
}

// A runner RoleBinding bound to another role is recreated (its roleRef
// cannot change in place); a RunConfig with other bytes, and their
// checksum on the proxy's pod template, are rewritten, which rolls the
// proxy: each is named with why.
func TestPreflightRecreatesAndRewrites(t *testing.T) {
	kube, th := converged(t, server())
	var checksum string
	for _, o := range kube {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			if o.Name == naming.RunConfigName("fetch") {
				o.Data["runconfig.json"] = `{"old":true}`
			}
		case *appsv1.Deployment:
			// The checksum of those other bytes, as the operator that
			// wrote them stamped it.
			for k := range o.Spec.Template.Annotations {
				if strings.Contains(k, "checksum") {
					o.Spec.Template.Annotations[k] = "0ld"
					checksum = k
				}
			}
		}
	}
	bindings := 0
	for _, o := range kube {
		if rb, ok := o.(*rbacv1.RoleBinding); ok {
			rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "old-role"}
			bindings++
		}
	}
	r := runPreflight(t, fakeClients(kube, th))
	if got := r.Prediction.Rewritten; len(got) != 1 || got[0].Name != naming.RunConfigName("fetch") || got[0].Detail != "runconfig.json changed" {
		t.Errorf("rewritten %s", toJSON(got))
	}
	if got := r.Prediction.Restarts; len(got) != 1 || got[0].Name != "fetch" || got[0].Field != "spec.template.metadata.annotations" ||
		!strings.HasPrefix(got[0].Detail, checksum+`: "0ld" → "`) {
		t.Errorf("restarts %s", toJSON(got))
	}
	if got := r.Prediction.Recreated; len(got) != bindings || bindings == 0 || got[0].Field != "roleRef" || !strings.HasPrefix(got[0].Detail, "Role/old-role → ClusterRole/") {
		t.Errorf("%d RoleBindings changed, recreated %s", bindings, toJSON(got))
	}
	if r.Summary != "1 pod restarts, "+count(bindings, "object recreated", "objects recreated")+", 1 ConfigMap rewritten" {
		t.Errorf("summary %q", r.Summary)
	}
}

func equalJSON(a, b any) bool { return toJSON(a) == toJSON(b) }

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// What hivekeeper refuses is listed with the condition that says why: an
// invalid podTemplateSpec fails the server, a missing MCPOIDCConfig
// leaves it waiting. Neither restarts anything.
func TestPreflightListsRefusals(t *testing.T) {
	bad := toolhivetest.NewMCPServer("team-a", "bad", func(s *thv1.MCPServer) {
		s.Spec.PodTemplateSpec = toolhivetest.Raw(`{"spec":{"containers":"nope"}}`)
	})
	oidc := toolhivetest.NewMCPServer("team-a", "oidc", func(s *thv1.MCPServer) {
		s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "missing", Audience: "x"}
	})
	r := runPreflight(t, fakeClients(nil, []runtime.Object{bad, oidc}))
	want := []Finding{
		{Kind: "MCPServer", Namespace: "team-a", Name: "bad", Condition: "PodTemplateValid=False", Reason: "InvalidPodTemplateSpec",
			Message: "spec.podTemplateSpec: not a valid pod template: json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container"},
		{Kind: "MCPServer", Namespace: "team-a", Name: "oidc", Condition: "OIDCConfigRefValidated=False", Reason: "OIDCConfigRefNotFound",
			Message: `MCPOIDCConfig "missing" not found`},
	}
	if !equalJSON(r.Refused, want) {
		t.Errorf("refused\n got %s\nwant %s", toJSON(r.Refused), toJSON(want))
	}
	if r.Summary != "0 pods restart, 0 objects recreated, 0 ConfigMaps rewritten" || r.ExitCode != exitOK {
		t.Errorf("summary %q, exit %d", r.Summary, r.ExitCode)
	}
	var out bytes.Buffer
	if err := r.write(&out, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Validation: hivekeeper would refuse 2 objects:\n  MCPServer team-a/bad: PodTemplateValid=False InvalidPodTemplateSpec: ") ||
		strings.Contains(out.String(), "warning event") {
		t.Errorf("text output:\n%s", out.String())
	}
}

// A workload whose pod hivekeeper will not run (a privileged template,
// another workload's account), which ToolHive's operator may be running,
// blocks a switch: preflight names the object and the field, and exits 4.
func TestPreflightBlocksOnRefusedPods(t *testing.T) {
	privileged := toolhivetest.NewMCPServer("team-a", "priv", func(s *thv1.MCPServer) {
		s.Spec.PodTemplateSpec = toolhivetest.Raw(`{"spec":{"hostNetwork":true}}`)
	})
	account := toolhivetest.NewMCPServer("team-a", "borrow", func(s *thv1.MCPServer) {
		s.Spec.ServiceAccount = ptr.To("fetch-proxy-runner")
	})
	r := runPreflight(t, fakeClients([]runtime.Object{toolhivetest.ManagedServiceAccount("team-a", "fetch-proxy-runner", thv1.KindMCPServer, "fetch")},
		[]runtime.Object{privileged, account, server()}))
	if r.ExitCode != exitBlocked || len(r.Blockers) != 2 {
		t.Fatalf("exit %d, blockers %q", r.ExitCode, r.Blockers)
	}
	for _, want := range []string{
		"MCPServer team-a/borrow: spec.serviceAccount: ServiceAccount \"fetch-proxy-runner\" is managed by hivekeeper for MCPServer fetch",
		"MCPServer team-a/priv: spec.podTemplateSpec.spec.hostNetwork: the node's namespace is not allowed",
	} {
		if !slices.ContainsFunc(r.Blockers, func(b string) bool { return strings.HasPrefix(b, want) }) {
			t.Errorf("blockers %q, want one starting %q", r.Blockers, want)
		}
	}
}

// collidingHeaders is an MCPRemoteProxy ToolHive's operator runs and
// hivekeeper refuses: it forwards one header under two spellings.
func collidingHeaders(name string) *thv1.MCPRemoteProxy {
	return toolhivetest.NewRemoteProxy("team-a", name, func(p *thv1.MCPRemoteProxy) {
		p.UID = types.UID("uid-" + name)
		p.Spec.HeaderForward = &thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X-Tenant": "a", "x-tenant": "b"}}
	})
}

// A workload ToolHive's operator runs (it has children) that hivekeeper
// refuses blocks a switch once, named with the reason, unless
// --allow-unmanaged names it (a refusal on purpose too: that blocker
// stands for both).
func TestPreflightBlocksOnUnmanaged(t *testing.T) {
	running := collidingHeaders("legacy")
	child := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "legacy", Labels: map[string]string{"toolhive": "true"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: thv1.SchemeGroupVersion.String(), Kind: "MCPRemoteProxy", Name: "legacy", UID: running.UID, Controller: ptr.To(true)}}}}
	c := fakeClients([]runtime.Object{child}, []runtime.Object{running})

	r := runPreflight(t, c)
	if len(r.Refused) < 1 {
		t.Fatalf("refused %s", toJSON(r.Refused))
	}
	want := []Unmanaged{{Kind: "MCPRemoteProxy", Namespace: "team-a", Name: "legacy", Children: 1}}
	if len(r.Unmanaged) != 1 || r.Unmanaged[0].Why == "" {
		t.Fatalf("unmanaged %s", toJSON(r.Unmanaged))
	}
	want[0].Why = r.Unmanaged[0].Why
	if !equalJSON(r.Unmanaged, want) || !strings.Contains(r.Unmanaged[0].Why, "HeaderForwardInvalid") {
		t.Errorf("unmanaged\n got %s\nwant %s", toJSON(r.Unmanaged), toJSON(want))
	}
	if r.ExitCode != exitBlocked || len(r.Blockers) != 1 || !strings.HasPrefix(r.Blockers[0], "MCPRemoteProxy team-a/legacy: Ready=False HeaderForwardInvalid: ") ||
		!strings.HasSuffix(r.Blockers[0], "--allow-unmanaged MCPRemoteProxy/team-a/legacy") {
		t.Errorf("exit %d, blockers %q", r.ExitCode, r.Blockers)
	}

	r, err := preflight(context.Background(), c, preflightOptions{timeout: time.Minute, allowUnmanaged: []string{"mcpremoteproxy/team-a/legacy"}}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == exitBlocked || len(r.Blockers) != 0 || len(r.Unmanaged) != 1 || !r.Unmanaged[0].Allowed {
		t.Errorf("allowed: exit %d, blockers %q, unmanaged %s", r.ExitCode, r.Blockers, toJSON(r.Unmanaged))
	}
	var out bytes.Buffer
	if err := r.write(&out, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "  left unmanaged (--allow-unmanaged): MCPRemoteProxy team-a/legacy, which ToolHive's operator runs (1 child): Ready=False HeaderForwardInvalid: ") {
		t.Errorf("text output:\n%s", out.String())
	}
}

// What ToolHive's operator deploys and hivekeeper refuses on purpose (a
// remote proxy's header named two ways, a webhook with half a client
// certificate, an EmbeddingServer's template that is not a pod template)
// blocks a switch: preflight names every object, and exits 4.
func TestPreflightBlocksOnDeliberateRefusals(t *testing.T) {
	headers := toolhivetest.NewRemoteProxy("team-a", "headers", func(p *thv1.MCPRemoteProxy) {
		p.Spec.HeaderForward = &thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X-Tenant": "a", "x-tenant": "b"}}
	})
	hook := toolhivetest.NewWebhookConfig("team-a", "hooks", "full")
	hook.Status = thv1.ConfigStatus{}
	hook.Spec.Validating[0].TLSConfig.ClientKeySecretRef = nil
	hooked := toolhivetest.NewMCPServer("team-a", "hooked", func(s *thv1.MCPServer) {
		s.Spec.WebhookConfigRef = &thv1.WebhookConfigReference{Name: "hooks"}
	})
	embedding := toolhivetest.NewEmbeddingServer("team-a", "embed", func(e *thv1.EmbeddingServer) {
		e.Spec.PodTemplateSpec = toolhivetest.Raw(`{"spec":{"containers":"nope"}}`)
	})
	r := runPreflight(t, fakeClients(nil, []runtime.Object{headers, hook, hooked, embedding, server()}))
	if r.ExitCode != exitBlocked {
		t.Errorf("exit %d", r.ExitCode)
	}
	for _, want := range []string{
		"MCPRemoteProxy team-a/headers: Ready=False HeaderForwardInvalid: ",
		"MCPServer team-a/hooked: WebhookConfigValidated=False WebhookConfigInvalid: ",
		"MCPWebhookConfig team-a/hooks: Valid=False ",
		"EmbeddingServer team-a/embed: PodTemplateValid=False ",
	} {
		if !slices.ContainsFunc(r.Blockers, func(b string) bool { return strings.HasPrefix(b, want) }) {
			t.Errorf("blockers %q, want one starting %q", r.Blockers, want)
		}
	}
	if n := len(r.Blockers); n != 4 {
		t.Errorf("%d blockers: %q", n, r.Blockers)
	}
}

// A refused workload of which ToolHive's operator wrote only an account
// (as it does before refusing) is not one it runs: it is not unmanaged.
func TestPreflightAccountAloneIsNotRunning(t *testing.T) {
	proxy := collidingHeaders("accounted")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "accounted-remote-proxy-runner",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: thv1.SchemeGroupVersion.String(), Kind: "MCPRemoteProxy", Name: "accounted", UID: proxy.UID, Controller: ptr.To(true)}}}}
	r := runPreflight(t, fakeClients([]runtime.Object{sa}, []runtime.Object{proxy}))
	if len(r.Unmanaged) != 0 {
		t.Errorf("unmanaged %s, want none", toJSON(r.Unmanaged))
	}
}
