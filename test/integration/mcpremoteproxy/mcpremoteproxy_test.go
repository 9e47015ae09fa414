// Package mcpremoteproxy tests the MCPRemoteProxy controller against a
// real API server: the children it writes (with and without its own
// runner RBAC), its status with an OIDC reference, and zero writes once
// converged, across informer resyncs.
package mcpremoteproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpoidcconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpremoteproxy"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// allControllers are every controller the test runs: steady state means
// none of them writes, not only the one under test.
var allControllers = []string{mcpremoteproxy.Name, mcpserver.Name, mcpgroup.Name, mcpoidcconfig.Name}

// settle bounds each wait for hivekeeper to follow a change; a quiet
// machine takes well under a second, and the bound only ends a wait that
// will never succeed, so a busy machine does not fail a test that is
// right. quiet is how long nothing must be written before the writes are
// counted: several of the config statuses' 500 ms fan-in windows.
const (
	settle = 2 * time.Minute
	quiet  = 3 * time.Second
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// createValidConfig creates an inline MCPOIDCConfig with a client secret
// and a CA bundle and waits for the MCPOIDCConfig controller to mark it
// Valid.
func createValidConfig(t *testing.T, env *framework.Env, ns, name string) *thv1.MCPOIDCConfig {
	t.Helper()
	ctx := testCtx(t)
	_, err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Create(ctx, &thv1.MCPOIDCConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeInline, Inline: &thv1.InlineOIDCConfig{
			Issuer: "https://idp.example.com", JWKSURL: "https://idp.example.com/jwks", ClientID: "hive",
			ClientSecretRef: &thv1.SecretKeyRef{Name: "idp", Key: "secret"},
			CABundleRef:     &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "idp-ca"}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating MCPOIDCConfig: %v", err)
	}
	var cfg *thv1.MCPOIDCConfig
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		cfg, err = env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(cfg.Status.Conditions, thv1.ConditionValid) && cfg.Status.ConfigHash != "", err
	}, "MCPOIDCConfig %s to be Valid", name)
	return cfg
}

// Both proxies converge to the children of the contract; the one with its
// own service account gets no RBAC; then nothing is written at all for
// three seconds of one-second informer resyncs.
func TestChildrenStatusAndSteadyState(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	ctx := testCtx(t)
	cfg := createValidConfig(t, env, ns, "auth")

	proxies := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns)
	if _, err := proxies.Create(ctx, &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: "remote"},
		Spec: thv1.MCPRemoteProxySpec{
			RemoteURL: "https://remote.example.com/sse", Transport: thv1.TransportSSE,
			OIDCConfigRef: &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp"},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := proxies.Create(ctx, &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: "byo"},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://remote.example.com/mcp", ServiceAccount: ptr.To("byo-sa")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	framework.Eventually(t, 15*time.Second, func() (bool, error) {
		p, err := proxies.Get(ctx, "remote", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := p.Status
		ok := s.ObservedGeneration == p.Generation && s.OIDCConfigHash == cfg.Status.ConfigHash &&
			s.URL == fmt.Sprintf("http://mcp-remote-remote-proxy.%s.svc.cluster.local:8080/sse", ns) &&
			meta.IsStatusConditionTrue(s.Conditions, thv1.ConditionOIDCConfigRefValidated) && s.Phase == thv1.MCPRemoteProxyPhasePending
		return ok, fmt.Errorf("status %+v", s)
	}, "status of remote")

	k := env.Kube
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		if _, err := k.AppsV1().Deployments(ns).Get(ctx, "remote", metav1.GetOptions{}); err != nil {
			return false, err
		}
		_, err := k.AppsV1().Deployments(ns).Get(ctx, "byo", metav1.GetOptions{})
		return err == nil, err
	}, "both proxy Deployments")

	cm, err := k.CoreV1().ConfigMaps(ns).Get(ctx, "remote-runconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if rc.RemoteURL != "https://remote.example.com/sse" || rc.Image != "" || rc.MCPServerGeneration != 0 || rc.OIDCConfig == nil ||
		rc.OIDCConfig.CACertPath != "/config/certs/idp-ca/ca.crt" {
		t.Errorf("runconfig %+v", rc)
	}
	dep, err := k.AppsV1().Deployments(ns).Get(ctx, "remote", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tpl := dep.Spec.Template
	if tpl.Annotations[naming.AnnotationRunConfigChecksum] != cm.Annotations[schema.ChecksumAnnotation] ||
		!slices.Equal(tpl.Spec.Containers[0].Args, []string{"run", "--foreground=true", "placeholder-for-remote-proxy"}) ||
		tpl.Spec.ServiceAccountName != "remote-remote-proxy-runner" {
		t.Errorf("deployment template %+v", tpl)
	}
	for _, get := range []func() error{
		func() error {
			_, err := k.CoreV1().ServiceAccounts(ns).Get(ctx, "remote-remote-proxy-runner", metav1.GetOptions{})
			return err
		},
		func() error {
			rb, err := k.RbacV1().RoleBindings(ns).Get(ctx, "remote-remote-proxy-runner", metav1.GetOptions{})
			if err == nil && (rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != rbac.DefaultRemoteProxyRunnerClusterRole) {
				err = fmt.Errorf("runner binding binds %+v", rb.RoleRef)
			}
			return err
		},
		func() error {
			_, err := k.CoreV1().Services(ns).Get(ctx, "mcp-remote-remote-proxy", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("child of remote: %v", err)
		}
	}

	byo, err := k.AppsV1().Deployments(ns).Get(ctx, "byo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if byo.Spec.Template.Spec.ServiceAccountName != "byo-sa" {
		t.Errorf("byo serviceAccountName %s", byo.Spec.Template.Spec.ServiceAccountName)
	}
	for _, get := range []func() error{
		func() error {
			_, err := k.CoreV1().ServiceAccounts(ns).Get(ctx, "byo-remote-proxy-runner", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := k.RbacV1().RoleBindings(ns).Get(ctx, "byo-remote-proxy-runner", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("RBAC for a proxy with its own service account: %v", err)
		}
	}

	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)
	if w := workloadtest.WritesTotal(t, mcpremoteproxy.Name); w[mcpremoteproxy.Name+" mcpoidcconfigs patch success"] != 0 {
		t.Errorf("the MCPRemoteProxy controller wrote an MCPOIDCConfig: %v", w)
	}
}
