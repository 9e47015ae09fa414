// Package vmcpkinds tests the two kinds a VirtualMCPServer builds on
// against a real API server: MCPServerEntry (status, group membership,
// holding its MCPExternalAuthConfig) and VirtualMCPCompositeToolDefinition
// (validation, ToolHive's status fields, references from
// spec.config.compositeToolRefs, deletion protection).
package vmcpkinds

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserverentry"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpcompositetooldefinition"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// timeout bounds each wait for a condition; it only ends a wait that
// will never succeed.
const timeout = 2 * time.Minute

// resync is the informers' resync period: a resync re-queues every object,
// so the steady-state checks cover "no write on resync" too.
const resync = time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// gone waits until get reports NotFound.
func gone(t *testing.T, what string, get func() error) {
	t.Helper()
	framework.Eventually(t, timeout, func() (bool, error) {
		err := get()
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}, "%s to be gone", what)
}

// An entry is Valid once its group is Ready, is listed in the group's
// status.entries, and holds its MCPExternalAuthConfig: deleting the config
// is blocked until the entry goes. A bad URL is Failed with the reason.
func TestServerEntryLifecycle(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := testCtx(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: resync})
	th := env.Toolhive.ToolhiveV1beta1()

	_, err := th.MCPGroups(ns).Create(ctx, &thv1.MCPGroup{ObjectMeta: metav1.ObjectMeta{Name: "remote"}}, metav1.CreateOptions{})
	must(t, err)
	_, err = th.MCPExternalAuthConfigs(ns).Create(ctx, &thv1.MCPExternalAuthConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "exchange"},
		Spec: thv1.MCPExternalAuthConfigSpec{Type: "headerInjection", HeaderInjection: &thv1.HeaderInjectionConfig{
			HeaderName: "X-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "k", Key: "v"}}},
	}, metav1.CreateOptions{})
	must(t, err)
	entry := func(name, url string) *thv1.MCPServerEntry {
		return &thv1.MCPServerEntry{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: thv1.MCPServerEntrySpec{
			RemoteURL: url, Transport: thv1.TransportStreamableHTTP, GroupRef: &thv1.GroupRef{Name: "remote"},
			ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "exchange"},
			HeaderForward:         &thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X-Tenant": "a"}},
		}}
	}
	_, err = th.MCPServerEntries(ns).Create(ctx, entry("good", "https://mcp.remote.example/mcp"), metav1.CreateOptions{})
	must(t, err)
	_, err = th.MCPServerEntries(ns).Create(ctx, entry("metadata", "http://169.254.169.254/"), metav1.CreateOptions{})
	must(t, err)

	phase := func(name, want, condType, reason string) func() (bool, error) {
		return func() (bool, error) {
			e, err := th.MCPServerEntries(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(e.Status.Conditions, condType)
			if e.Status.Phase != want || c == nil || c.Reason != reason {
				return false, fmt.Errorf("phase %q, conditions %+v", e.Status.Phase, e.Status.Conditions)
			}
			return true, nil
		}
	}
	framework.Eventually(t, timeout, phase("good", thv1.MCPServerEntryPhaseValid, thv1.ConditionGroupRefValidated, thv1.ReasonGroupRefValidated), "the entry to be Valid")
	framework.Eventually(t, timeout, phase("metadata", thv1.MCPServerEntryPhaseFailed, thv1.ConditionRemoteURLValidated, thv1.ReasonRemoteURLInvalid), "the metadata URL to be refused")
	framework.Eventually(t, timeout, func() (bool, error) {
		g, err := th.MCPGroups(ns).Get(ctx, "remote", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !slices.Equal(g.Status.Entries, []string{"good", "metadata"}) || g.Status.EntryCount != 2 {
			return false, fmt.Errorf("entries %q count %d", g.Status.Entries, g.Status.EntryCount)
		}
		return true, nil
	}, "the group to list both entries")
	framework.Eventually(t, timeout, func() (bool, error) {
		c, err := th.MCPExternalAuthConfigs(ns).Get(ctx, "exchange", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return c.Status.ReferenceCount == 2 && c.Status.ReferencingWorkloads[0].Kind == thv1.KindMCPServerEntry, fmt.Errorf("referrers %+v", c.Status.ReferencingWorkloads)
	}, "the auth config to list the entries")

	// Steady state: nothing of the namespace changes, no controller writes.
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*resync, mcpserverentry.Name, mcpgroup.Name, "mcpexternalauthconfig")

	must(t, th.MCPExternalAuthConfigs(ns).Delete(ctx, "exchange", metav1.DeleteOptions{}))
	framework.Eventually(t, timeout, func() (bool, error) {
		c, err := th.MCPExternalAuthConfigs(ns).Get(ctx, "exchange", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(c.Status.Conditions, thv1.ConditionDeletionBlocked), nil
	}, "the auth config's deletion to be blocked")
	must(t, th.MCPServerEntries(ns).Delete(ctx, "good", metav1.DeleteOptions{}))
	must(t, th.MCPServerEntries(ns).Delete(ctx, "metadata", metav1.DeleteOptions{}))
	gone(t, "the auth config", func() error {
		_, err := th.MCPExternalAuthConfigs(ns).Get(ctx, "exchange", metav1.GetOptions{})
		return err
	})
	framework.Eventually(t, timeout, func() (bool, error) {
		g, err := th.MCPGroups(ns).Get(ctx, "remote", metav1.GetOptions{})
		return err == nil && g.Status.EntryCount == 0 && g.Status.Entries == nil, err
	}, "the group to list no entry")
}

// A definition is validated (ToolHive's status fields), lists the
// VirtualMCPServers whose spec.config.compositeToolRefs name it, and
// cannot be deleted while one does; the server waits for a missing
// definition and is deployed once it exists.
func TestCompositeToolDefinitionLifecycle(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := testCtx(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: resync})
	th := env.Toolhive.ToolhiveV1beta1()

	def := func(name, description string) *thv1.VirtualMCPCompositeToolDefinition {
		return &thv1.VirtualMCPCompositeToolDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: thv1.CompositeToolSpec{
			Name: name, Description: description, Timeout: "1m",
			Parameters: &runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{"url":{"type":"string"}}}`)},
			Steps: []thv1.WorkflowStep{{ID: "fetch", Tool: "fetch.fetch", Arguments: &runtime.RawExtension{Raw: []byte(`{"url":"{{.params.url}}"}`)}},
				{ID: "echo", Tool: "echo.echo", DependsOn: []string{"fetch"}}},
		}}
	}
	_, err := th.VirtualMCPCompositeToolDefinitions(ns).Create(ctx, def("fetch-twice", "fetches"), metav1.CreateOptions{})
	must(t, err)
	_, err = th.VirtualMCPCompositeToolDefinitions(ns).Create(ctx, def("no-description", ""), metav1.CreateOptions{})
	must(t, err)
	getDef := func(name string) (*thv1.VirtualMCPCompositeToolDefinition, error) {
		return th.VirtualMCPCompositeToolDefinitions(ns).Get(ctx, name, metav1.GetOptions{})
	}
	framework.Eventually(t, timeout, func() (bool, error) {
		d, err := getDef("fetch-twice")
		if err != nil {
			return false, err
		}
		return d.Status.ValidationStatus == thv1.ValidationStatusValid && d.Status.ConfigHash != "" &&
			slices.Contains(d.Finalizers, thv1.VirtualMCPCompositeToolDefinitionFinalizer), fmt.Errorf("status %+v", d.Status)
	}, "the definition to be Valid")
	framework.Eventually(t, timeout, func() (bool, error) {
		d, err := getDef("no-description")
		if err != nil {
			return false, err
		}
		return d.Status.ValidationStatus == thv1.ValidationStatusInvalid && len(d.Status.ValidationErrors) == 1 &&
			meta.IsStatusConditionFalse(d.Status.Conditions, thv1.ConditionValid), fmt.Errorf("status %+v", d.Status)
	}, "the definition without description to be Invalid")

	_, err = th.MCPGroups(ns).Create(ctx, &thv1.MCPGroup{ObjectMeta: metav1.ObjectMeta{Name: "g"}}, metav1.CreateOptions{})
	must(t, err)
	_, err = th.MCPServers(ns).Create(ctx, &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: "fetch"},
		Spec: thv1.MCPServerSpec{Image: "ghcr.io/example/fetch:1", GroupRef: &thv1.GroupRef{Name: "g"}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = th.VirtualMCPServers(ns).Create(ctx, &thv1.VirtualMCPServer{ObjectMeta: metav1.ObjectMeta{Name: "v"},
		Spec: thv1.VirtualMCPServerSpec{IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous}, GroupRef: thv1.GroupRef{Name: "g"},
			Config: &thv1.VirtualMCPConfig{CompositeToolRefs: []thv1.VMCPCompositeToolRef{{Name: "fetch-twice"}, {Name: "later"}}}}}, metav1.CreateOptions{})
	must(t, err)
	refCondition := func(status metav1.ConditionStatus, reason string) func() (bool, error) {
		return func() (bool, error) {
			v, err := th.VirtualMCPServers(ns).Get(ctx, "v", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionCompositeToolRefsValidated)
			return c != nil && c.Status == status && c.Reason == reason, fmt.Errorf("phase %q conditions %+v", v.Status.Phase, v.Status.Conditions)
		}
	}
	framework.Eventually(t, timeout, refCondition(metav1.ConditionFalse, thv1.ReasonCompositeToolRefNotFound), "the server to wait for the missing definition")
	if _, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "v", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment exists while a definition is missing: %v", err)
	}
	framework.Eventually(t, timeout, func() (bool, error) {
		d, err := getDef("fetch-twice")
		return err == nil && slices.Equal(d.Status.ReferencingVirtualServers, []string{"v"}), fmt.Errorf("%v %+v", err, d)
	}, "the definition to list its server")

	_, err = th.VirtualMCPCompositeToolDefinitions(ns).Create(ctx, def("later", "arrives later"), metav1.CreateOptions{})
	must(t, err)
	framework.Eventually(t, timeout, refCondition(metav1.ConditionTrue, thv1.ReasonCompositeToolRefsValid), "the references to be valid")
	var checksum string
	framework.Eventually(t, timeout, func() (bool, error) {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "v", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		checksum = d.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
		return checksum != "", nil
	}, "the vMCP Deployment")

	// A change of a definition rolls the vMCP once.
	_, err = th.VirtualMCPCompositeToolDefinitions(ns).Patch(ctx, "later", types.MergePatchType, []byte(`{"spec":{"timeout":"2m"}}`), metav1.PatchOptions{})
	must(t, err)
	framework.Eventually(t, timeout, func() (bool, error) {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "v", metav1.GetOptions{})
		return err == nil && d.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] != checksum, err
	}, "the vMCP to roll")
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*resync,
		virtualmcpcompositetooldefinition.Name, virtualmcpserver.Name)

	must(t, th.VirtualMCPCompositeToolDefinitions(ns).Delete(ctx, "later", metav1.DeleteOptions{}))
	framework.Eventually(t, timeout, func() (bool, error) {
		d, err := getDef("later")
		return err == nil && meta.IsStatusConditionTrue(d.Status.Conditions, thv1.ConditionDeletionBlocked), err
	}, "the definition's deletion to be blocked")
	must(t, th.VirtualMCPServers(ns).Delete(ctx, "v", metav1.DeleteOptions{}))
	gone(t, "the definition", func() error { _, err := getDef("later"); return err })
}
