// Package apiserver tests what the real API server does with hivekeeper's
// CRDs: the behaviour the controllers rely on (preserved unknown fields, CEL
// validation, defaulting, the status subresource, optimistic locking, RBAC
// of a real identity) and the test server's own life cycle.
package apiserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	thv1beta1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

var mcpServers = thv1beta1.SchemeGroupVersion.WithResource("mcpservers")

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestCRDsEstablished(t *testing.T) {
	env := framework.Get(t)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := framework.ServedKinds(); len(files) != want {
		t.Fatalf("config/crd holds %d CRD files, want %d (one per kind)", len(files), want)
	}
	crds, err := framework.ReadManifests(files...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range crds {
		got, err := env.Dynamic.Resource(framework.CRDResource).Get(ctx(t), want.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("CRD %s: %v", want.GetName(), err)
			continue
		}
		if !framework.CRDEstablished(got) {
			t.Errorf("CRD %s is not Established: %v", want.GetName(), got.Object["status"])
		}
	}
}

func TestExamplesAreValid(t *testing.T) {
	env := framework.Get(t)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	objs, err := framework.ApplyManifests(ctx(t), env.Config, ns, filepath.Join(root, "examples"))
	if err != nil {
		t.Fatalf("examples/ rejected by the CRDs: %v", err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	for kind, min := range map[string]int{"MCPOIDCConfig": 2, "MCPTelemetryConfig": 1, "MCPWebhookConfig": 1, "MCPGroup": 1, "MCPServer": 2, "MCPRemoteProxy": 1, "VirtualMCPServer": 1} {
		if kinds[kind] < min {
			t.Errorf("examples/ has %d %s, want at least %d", kinds[kind], kind, min)
		}
	}
}

// The ToolHive API has many spec fields hivekeeper does not model; a CRD
// that pruned them would silently delete other writers' configuration.
func TestUnknownSpecFieldsRoundTrip(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	unknown := map[string]any{
		"endpoint":    "http://collector:4318",
		"sampling":    "0.25",
		"nested":      map[string]any{"list": []any{"a", "b"}, "flag": true},
		"serviceName": "fetch",
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": thv1beta1.SchemeGroupVersion.String(),
		"kind":       thv1beta1.KindMCPServer,
		"metadata":   map[string]any{"name": "fetch", "namespace": ns},
		"spec": map[string]any{
			"image":         "docker.io/mcp/fetch:latest",
			"telemetry":     unknown,
			"futureField":   "kept",
			"authServerRef": map[string]any{"kind": "MCPExternalAuthConfig", "name": "embedded"},
		},
	}}
	if _, err := env.Dynamic.Resource(mcpServers).Namespace(ns).Create(ctx(t), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := env.Dynamic.Resource(mcpServers).Namespace(ns).Get(ctx(t), "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"telemetry", "futureField", "authServerRef"} {
		want, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", field)
		have, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", field)
		if !found || !equality.Semantic.DeepEqual(want, have) {
			t.Errorf("spec.%s after the round trip = %#v (found %v), want %#v", field, have, found, want)
		}
	}
}

func TestOIDCConfigCELRejectsMismatchedBlocks(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	const (
		inlineMsg = "inline must be set if and only if type is inline"
		ksaMsg    = "kubernetesServiceAccount must be set if and only if type is kubernetesServiceAccount"
	)
	cases := map[string]struct {
		spec thv1beta1.MCPOIDCConfigSpec
		msg  string
	}{
		"inline with a kubernetesServiceAccount block": {thv1beta1.MCPOIDCConfigSpec{
			Type:                     thv1beta1.OIDCConfigTypeInline,
			Inline:                   &thv1beta1.InlineOIDCConfig{Issuer: "https://idp.example.com"},
			KubernetesServiceAccount: &thv1beta1.KubernetesServiceAccountOIDCConfig{},
		}, ksaMsg},
		"kubernetesServiceAccount with an inline block": {thv1beta1.MCPOIDCConfigSpec{
			Type:                     thv1beta1.OIDCConfigTypeKubernetesServiceAccount,
			Inline:                   &thv1beta1.InlineOIDCConfig{Issuer: "https://idp.example.com"},
			KubernetesServiceAccount: &thv1beta1.KubernetesServiceAccountOIDCConfig{},
		}, inlineMsg},
		"inline without its block": {thv1beta1.MCPOIDCConfigSpec{
			Type: thv1beta1.OIDCConfigTypeInline,
		}, inlineMsg},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Create(ctx(t), &thv1beta1.MCPOIDCConfig{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"},
				Spec:       tc.spec,
			}, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create error = %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not explain the rule (want it to contain %q)", err, tc.msg)
			}
		})
	}
	// The valid shape passes, so the rule is not simply rejecting all.
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Create(ctx(t), &thv1beta1.MCPOIDCConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "good"},
		Spec:       thv1beta1.MCPOIDCConfigSpec{Type: thv1beta1.OIDCConfigTypeInline, Inline: &thv1beta1.InlineOIDCConfig{Issuer: "https://idp.example.com"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid inline config rejected: %v", err)
	}
}

// TestExternalAuthConfigCELRejectsMismatchedBlocks: as in ToolHive's CRD,
// the block named by spec.type must be set and no other block may be.
func TestExternalAuthConfigCELRejectsMismatchedBlocks(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	bearer := &thv1beta1.BearerTokenConfig{TokenSecretRef: &thv1beta1.SecretKeyRef{Name: "s", Key: "k"}}
	cases := map[string]struct {
		spec thv1beta1.MCPExternalAuthConfigSpec
		msg  string
	}{
		"bearerToken without its block": {thv1beta1.MCPExternalAuthConfigSpec{Type: thv1beta1.ExternalAuthTypeBearerToken},
			"bearerToken configuration must be set if and only if type is 'bearerToken'"},
		"unauthenticated with a bearerToken block": {thv1beta1.MCPExternalAuthConfigSpec{Type: thv1beta1.ExternalAuthTypeUnauthenticated, BearerToken: bearer},
			"bearerToken configuration must be set if and only if type is 'bearerToken'"},
		"tokenExchange with an awsSts block": {thv1beta1.MCPExternalAuthConfigSpec{Type: thv1beta1.ExternalAuthTypeTokenExchange,
			TokenExchange: &thv1beta1.TokenExchangeConfig{TokenURL: "https://idp/token", Audience: "a"},
			AWSSts:        &thv1beta1.AWSStsConfig{Region: "us-east-1"}},
			"awsSts configuration must be set if and only if type is 'awsSts'"},
		"an unknown type": {thv1beta1.MCPExternalAuthConfigSpec{Type: "oauth"}, "Unsupported value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := env.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(ns).Create(ctx(t), &thv1beta1.MCPExternalAuthConfig{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"},
				Spec:       tc.spec,
			}, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("create error = %v, want Invalid containing %q", err, tc.msg)
			}
		})
	}
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(ns).Create(ctx(t), &thv1beta1.MCPExternalAuthConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "good"},
		Spec:       thv1beta1.MCPExternalAuthConfigSpec{Type: thv1beta1.ExternalAuthTypeBearerToken, BearerToken: bearer},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid bearerToken config rejected: %v", err)
	}
	// An awsSts block gets ToolHive's schema defaults.
	aws, err := env.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(ns).Create(ctx(t), &thv1beta1.MCPExternalAuthConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "aws"},
		Spec: thv1beta1.MCPExternalAuthConfigSpec{Type: thv1beta1.ExternalAuthTypeAWSSts, AWSSts: &thv1beta1.AWSStsConfig{
			Region: "eu-west-1", FallbackRoleArn: "arn:aws:iam::123456789012:role/mcp"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("valid awsSts config rejected: %v", err)
	}
	if a := aws.Spec.AWSSts; a.Service != "aws-mcp" || a.RoleClaim != "groups" || a.SessionNameClaim != "sub" ||
		a.SessionDuration == nil || *a.SessionDuration != 3600 {
		t.Errorf("awsSts defaults: %+v", a)
	}
}

func TestStatusSubresourceChangesOnlyStatus(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	client := env.Toolhive.ToolhiveV1beta1().MCPServers(ns)
	created, err := client.Create(ctx(t), &thv1beta1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"team": "a"}},
		Spec:       thv1beta1.MCPServerSpec{Image: "img:1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	update := created.DeepCopy()
	update.Spec.Image = "img:2"
	update.Labels["team"] = "b"
	update.Status.Phase = thv1beta1.MCPServerPhaseReady
	update.Status.ObservedGeneration = created.Generation
	if _, err := client.UpdateStatus(ctx(t), update, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := client.Get(ctx(t), "s", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != thv1beta1.MCPServerPhaseReady {
		t.Errorf("status.phase = %q, want Ready", got.Status.Phase)
	}
	if got.Spec.Image != "img:1" || got.Labels["team"] != "a" {
		t.Errorf("a status write changed spec or metadata: image %q, label team=%q", got.Spec.Image, got.Labels["team"])
	}
	if got.Generation != created.Generation {
		t.Errorf("generation %d -> %d after a status write", created.Generation, got.Generation)
	}
}

// The controller's spec and metadata patches carry metadata.resourceVersion
// as an optimistic lock; that only works if the server enforces it on a
// merge patch.
func TestMergePatchWithStaleResourceVersionConflicts(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	client := env.Toolhive.ToolhiveV1beta1().MCPServers(ns)
	created, err := client.Create(ctx(t), &thv1beta1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec:       thv1beta1.MCPServerSpec{Image: "img:1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := created.ResourceVersion
	fresh, err := client.Patch(ctx(t), "s", types.MergePatchType,
		[]byte(`{"metadata":{"resourceVersion":"`+stale+`","finalizers":["mcpserver.toolhive.stacklok.dev/finalizer"]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch with the current resourceVersion: %v", err)
	}
	_, err = client.Patch(ctx(t), "s", types.MergePatchType,
		[]byte(`{"metadata":{"resourceVersion":"`+stale+`","finalizers":[]}}`), metav1.PatchOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("patch with a stale resourceVersion: error = %v, want 409 Conflict", err)
	}
	got, err := client.Get(ctx(t), "s", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != fresh.ResourceVersion || len(got.Finalizers) != 1 {
		t.Errorf("the rejected patch changed the object: resourceVersion %s -> %s, finalizers %v", fresh.ResourceVersion, got.ResourceVersion, got.Finalizers)
	}
}

// Drift checks must never compare against server defaults; these are the
// ones the CRDs add.
func TestDefaulting(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	th := env.Toolhive.ToolhiveV1beta1()
	s, err := th.MCPServers(ns).Create(ctx(t), &thv1beta1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec:       thv1beta1.MCPServerSpec{Image: "img"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Transport != thv1beta1.TransportStdio || s.Spec.ProxyPort != 8080 ||
		s.Spec.ProxyMode != thv1beta1.TransportStreamableHTTP || s.Spec.SessionAffinity != thv1beta1.SessionAffinityClientIP {
		t.Errorf("MCPServer defaults: transport %q proxyPort %d proxyMode %q sessionAffinity %q; want stdio 8080 streamable-http ClientIP",
			s.Spec.Transport, s.Spec.ProxyPort, s.Spec.ProxyMode, s.Spec.SessionAffinity)
	}
	if s.Spec.MCPPort != nil || s.Spec.Replicas != nil {
		t.Errorf("MCPServer mcpPort/replicas defaulted (%v, %v); nil has a meaning", s.Spec.MCPPort, s.Spec.Replicas)
	}

	rp, err := th.MCPRemoteProxies(ns).Create(ctx(t), &thv1beta1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: "rp"},
		Spec:       thv1beta1.MCPRemoteProxySpec{RemoteURL: "https://mcp.example.com/mcp"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rp.Spec.Transport != thv1beta1.TransportStreamableHTTP || rp.Spec.ProxyPort != 8080 {
		t.Errorf("MCPRemoteProxy defaults: transport %q proxyPort %d", rp.Spec.Transport, rp.Spec.ProxyPort)
	}

	oc, err := th.MCPOIDCConfigs(ns).Create(ctx(t), &thv1beta1.MCPOIDCConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "k8s"},
		Spec: thv1beta1.MCPOIDCConfigSpec{
			Type:                     thv1beta1.OIDCConfigTypeKubernetesServiceAccount,
			KubernetesServiceAccount: &thv1beta1.KubernetesServiceAccountOIDCConfig{},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := oc.Spec.KubernetesServiceAccount.Issuer; got != "https://kubernetes.default.svc" {
		t.Errorf("kubernetesServiceAccount.issuer defaulted to %q", got)
	}
}

// ConfigForUser must be the real identity: RBAC denies until a binding for
// that user or one of its groups exists.
func TestConfigForUserIsARealIdentity(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	cfg := env.ConfigForUser("alice", "mcp-readers")
	th, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx(t), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "alice" || !slices.Contains(u.Groups, "mcp-readers") {
		t.Fatalf("authenticated as %q %v, want alice in mcp-readers", u.Username, u.Groups)
	}

	if _, err := th.ToolhiveV1beta1().MCPServers(ns).List(ctx(t), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list before any binding: error = %v, want Forbidden", err)
	}
	rbac := env.Kube.RbacV1()
	if _, err := rbac.Roles(ns).Create(ctx(t), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "read-mcp"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{thv1beta1.GroupName}, Resources: []string{"mcpservers"}, Verbs: []string{"get", "list"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(ctx(t), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "read-mcp"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-mcp"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "mcp-readers"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		_, err := th.ToolhiveV1beta1().MCPServers(ns).List(ctx(t), metav1.ListOptions{})
		return err == nil, err
	}, "alice to list MCPServers through her group's binding")
	if _, err := th.ToolhiveV1beta1().MCPServers(ns).Create(ctx(t), &thv1beta1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: thv1beta1.MCPServerSpec{Image: "img"},
	}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create with a read-only role: error = %v, want Forbidden", err)
	}
	// Another user in no group gets nothing from alice's binding.
	bobTH, err := versioned.NewForConfig(env.ConfigForUser("bob"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bobTH.ToolhiveV1beta1().MCPServers(ns).List(ctx(t), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bob list: error = %v, want Forbidden", err)
	}
}

// A second server proves the life cycle: a restart keeps port and data, and
// Stop leaves no process and no folder behind.
func TestServerRestartAndCleanup(t *testing.T) {
	framework.Get(t) // skips like every test when no server can run
	srv, err := framework.Start(framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = srv.Stop()
		}
	})
	env, err := framework.NewEnv(srv)
	if err != nil {
		t.Fatal(err)
	}
	etcdPID, apiPID := srv.EtcdPID(), srv.APIServerPID()
	if etcdPID == 0 || apiPID == 0 {
		t.Fatalf("PIDs etcd=%d kube-apiserver=%d", etcdPID, apiPID)
	}
	if _, err := env.Kube.CoreV1().ConfigMaps("default").Create(ctx(t), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survives-restart"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := srv.RestartAPIServer(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	newPID := srv.APIServerPID()
	if newPID == apiPID || alive(apiPID) {
		t.Errorf("kube-apiserver PID %d -> %d after restart (old alive: %v)", apiPID, newPID, alive(apiPID))
	}
	// The same client, same URL and credentials, sees the data of before.
	if _, err := env.Kube.CoreV1().ConfigMaps("default").Get(ctx(t), "survives-restart", metav1.GetOptions{}); err != nil {
		t.Errorf("after restart: %v", err)
	}

	srv.KillAPIServer()
	if alive(newPID) {
		t.Errorf("kube-apiserver %d alive after KillAPIServer", newPID)
	}
	if err := srv.StartAPIServer(); err != nil {
		t.Fatalf("start after kill: %v", err)
	}
	lastPID := srv.APIServerPID()

	dir := srv.Dir
	stopped = true
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for name, pid := range map[string]int{"etcd": etcdPID, "kube-apiserver": lastPID} {
		if alive(pid) {
			t.Errorf("%s (pid %d) still alive after Stop", name, pid)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("folder %s still present after Stop (stat: %v)", dir, err)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// alive reports whether pid exists. Stop reaps its children, so a stopped
// server's PIDs are gone, not zombies.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
