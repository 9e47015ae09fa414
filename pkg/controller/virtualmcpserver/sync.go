package virtualmcpserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/vmcp"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// sync converges one VirtualMCPServer through the workload outline
// (workload.Sync). It is level-triggered: reconcile recomputes the desired
// state from the listers and never depends on the event that woke it. A
// converged server costs no API call at all.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	return workload.Sync(ctx, c.Base, key, c.servers.VirtualMCPServers(key.Namespace).Get,
		c.toolhive.ToolhiveV1beta1().VirtualMCPServers(key.Namespace).Patch, c.reconcile)
}

// reconcile resolves references and the group's members, builds the
// children, writes the ones that drifted, and returns the status to write.
// User errors become conditions and events, and are not retried.
func (c *Controller) reconcile(ctx context.Context, v *thv1.VirtualMCPServer) (*thv1.VirtualMCPServerStatus, time.Duration, error) {
	if v.DeletionTimestamp != nil {
		// Going: garbage collection removes the children, and writing
		// them now would only race it.
		return nil, 0, nil
	}
	status := v.Status.DeepCopy()
	status.ObservedGeneration = v.Generation
	status.URL = naming.VMCPServerURL(v)
	r := c.NewReport(v, &status.Conditions, &status.Phase, &status.Message)
	projectRuntime(r, status)
	r.Unsupported(vmcp.UnsupportedFields(v))
	// ToolHive's operator reports its own spec checks first, in Valid;
	// hivekeeper's run when config.yaml is built, and turn it False there.
	r.Set(thv1.ConditionValid, metav1.ConditionTrue, thv1.ReasonValidationSucceeded, "Spec validation passed")
	inboundGrantAdvisory(r, v, c.Recorder)

	groupFound := c.ResolveGroup(r, v.Namespace, v.Spec.GroupRef.Name)
	var ref *thv1.OIDCConfigReference
	if v.Spec.IncomingAuth.Type == thv1.IncomingAuthOIDC {
		ref = v.Spec.IncomingAuth.OIDCConfigRef
	}
	oidc, hash, ok := c.OIDC.Resolve(r, v.Namespace, naming.OIDCConfigName(ref))
	status.OIDCConfigHash = hash
	if ok {
		if err := workload.OIDCCABundleCondition(r, v.Namespace, oidc, c.Children.ConfigMaps.Get); err != nil {
			return status, 0, err
		}
	}
	var in vmcp.Input
	var authzOK, telemetryOK, toolsOK, extAuthOK bool
	in.Authz, status.AuthzConfigHash, authzOK = c.Authz.Resolve(r, v.Namespace, firstName(c.NamesIn(index.ByAuthzConfig, v)))
	in.Telemetry, status.TelemetryConfigHash, telemetryOK = c.Telemetry.Resolve(r, v.Namespace, firstName(c.NamesIn(index.ByTelemetryConfig, v)))
	in.Tools, toolsOK = c.Tools.ResolveAll(r, v.Namespace, c.NamesIn(index.ByToolConfig, v))
	in.ExtAuth, extAuthOK = c.ExtAuth.ResolveAll(r, v.Namespace, c.NamesIn(index.ByExternalAuthConfig, v))
	// Composite tool definitions are reported even while another
	// reference is missing, so that every missing reference shows at once.
	var compositeOK bool
	if names := c.NamesIn(index.ByCompositeToolDefinition, v); len(names) > 0 {
		in.CompositeTools, compositeOK = c.CompositeTools.ResolveAll(r, v.Namespace, names)
	} else {
		// ToolHive's operator reports the check passed on none too.
		r.Set(thv1.ConditionCompositeToolRefsValidated, metav1.ConditionTrue, thv1.ReasonCompositeToolRefsValid, "No composite tool references to validate")
		compositeOK = true
	}
	if !groupFound && v.Spec.GroupRef.Name != "" {
		// As ToolHive's operator reports it: a vMCP whose MCPGroup does not
		// exist is Failed and nothing is written or changed (children made
		// before the group went stay as they are), whatever else is
		// missing; no URL is published for a server never deployed. The
		// group's creation re-syncs this server (MemberHandler).
		status.URL = v.Status.URL
		r.Fail(thv1.ReasonGroupRefNotFound, fmt.Sprintf("Referenced MCPGroup %s not found", v.Spec.GroupRef.Name))
		return status, 0, nil
	}
	identityAdvisory(r, v)
	if ok {
		// ToolHive's operator writes it once incoming auth is resolved.
		workload.SessionStorageWarning(r, v.Spec.Replicas, v.Spec.SessionStorage)
	}
	if !ok || !authzOK || !telemetryOK || !toolsOK || !extAuthOK || !compositeOK {
		return status, 0, nil
	}
	// ToolHive's operator also checks here that the Secrets the auth
	// configs name exist; hivekeeper reads no Secret (vmcp and the
	// kubelet report a missing one).
	// Authorization from a ConfigMap: a Cedar file, checked before the
	// rest of incoming auth is reported valid (ToolHive's operator's
	// order); the ConfigMap's events re-sync the server.
	authzFile, problem, err := c.AuthzFiles.Read(ctx, v.Namespace, v.Spec.IncomingAuth.AuthzConfig, true)
	if err != nil {
		return status, 0, err
	}
	if problem != nil {
		// One Warning event, in ToolHive's words.
		r.Set(thv1.ConditionAuthConfigured, metav1.ConditionFalse, problem.Reason, "Authorization ConfigMap is invalid: "+problem.Message)
		r.Fail(problem.Reason, "Authz ConfigMap validation failed: "+problem.Message)
		return status, 0, nil
	}
	in.AuthzFile = authzFile
	r.Set(thv1.ConditionAuthConfigured, metav1.ConditionTrue, thv1.ReasonAuthValid, "Authentication configuration is valid")
	primaryUpstreamAdvisories(r, v, c.Recorder)
	if in.EmbeddingService, ok = embeddingService(r, v, c.embeddingServer(v)); !ok {
		return status, 0, nil
	}
	in.OIDC, in.Image, in.DefaultRedis, in.PullSecrets = oidc, c.Config.VMCPImage, c.Config.DefaultRedis, c.Config.PullSecrets
	in.Release, in.UsageMetrics = c.Config.Release, c.Config.UsageMetrics
	runners := c.Config.Runners.WithDefaults()
	in.ClusterRoles = vmcp.ClusterRoles{Discovered: runners.VMCPDiscovered, Inline: runners.VMCPInline}
	in.ServiceAccount = c.Children.NamedServiceAccount(v.Namespace, v.Spec.ServiceAccount)
	in.TemplateServiceAccount = c.Children.NamedServiceAccount(v.Namespace, wiring.PodTemplateServiceAccount(v.Spec.PodTemplateSpec))
	if in.Members, err = c.groupMembers(v.Namespace, v.Spec.GroupRef.Name); err != nil {
		return status, 0, err
	}
	in.MemberAuth = c.memberAuthConfigs(v.Namespace, in.Members)
	// The CA bundles of spec.authServerConfig: their content is hashed
	// into the pod template; their ConfigMaps' events re-sync the server.
	// One that cannot be used is reported once the rest of the
	// configuration passed its checks, as ToolHive's operator orders them.
	var caProblem *workload.CAProblem
	in.AuthServerCAChecksum, caProblem, err = c.AuthzFiles.AuthServerCA(ctx, v.Namespace, v.Spec.AuthServerConfig)
	if err != nil {
		return status, 0, err
	}
	desired, err := vmcp.Build(v, in)
	switch {
	case err == nil && caProblem != nil && !caProblem.Invalid:
		// The ConfigMap's creation re-syncs the server.
		r.Fail(thv1.ReasonCABundleNotFound, caProblem.Message)
		return status, 0, nil
	case err == nil && caProblem != nil:
		msg := "invalid CA bundle: " + caProblem.Message
		r.Set(thv1.ConditionAuthServerConfigValidated, metav1.ConditionFalse, thv1.ReasonAuthServerConfigInvalid, msg)
		r.Fail(thv1.ReasonAuthServerConfigInvalid, msg)
		return status, 0, nil
	}
	authServerCondition(r, v, err)
	var bad *wiring.InvalidSpecError
	if errors.As(err, &bad) && (bad.Reason == thv1.ReasonInvalidConfig || bad.Reason == thv1.ReasonInvalidSpec) {
		r.Set(thv1.ConditionValid, metav1.ConditionFalse, thv1.ReasonValidationFailed, bad.Message)
	}
	if err == nil {
		r.Set(thv1.ConditionPodTemplateValid, metav1.ConditionTrue, thv1.ReasonPodTemplateValid, "pod template spec is valid")
		reportBackendAuth(r, status.Conditions, desired.AuthConditions)
		if len(desired.Backends) == 0 && !vmcp.Discovers(v) {
			// In inline mode vmcp serves the backends config.yaml lists,
			// and given none it would switch to discovering them, which
			// its role does not allow (ToolHive's operator refuses such a
			// config too). Nothing is written; the first member's event
			// re-syncs this server through the index. In discovered mode
			// vmcp finds the members itself, and serves from the first.
			msg := fmt.Sprintf("MCPGroup %q has no MCPServers, MCPRemoteProxies or valid MCPServerEntries to aggregate; the vMCP is deployed once it has one", v.Spec.GroupRef.Name)
			if d := desired.Dropped; len(d) > 0 {
				msg += fmt.Sprintf(" (left out for their outgoing auth: %s)", strings.Join(d, ", "))
			}
			r.Pending(thv1.ReasonNoBackends, msg)
			return status, 0, nil
		}
	}
	var dep *appsv1.Deployment
	if err == nil {
		err = c.ensureHMACSecret(ctx, v)
	}
	if err == nil {
		want := workload.Desired{RunnerServiceAccount: desired.ServiceAccount, RunnerRoleBinding: desired.RoleBinding,
			ConfigMap: desired.Config, Service: desired.Service, Deployment: desired.Deployment}
		if desired.ServiceAccount == nil {
			// The account and binding made before the spec named its own.
			want.StaleServiceAccount = naming.VMCPServiceAccountName(v.Name)
			want.StaleRoleBinding = naming.VMCPServiceAccountName(v.Name)
		}
		before := c.lifecycle(desired.Deployment, desired.Service)
		if dep, err = c.Children.Ensure(ctx, c.Writer, v.UID, v.Namespace, want); err == nil {
			before.record(c.Recorder, v)
		}
	}
	requeueAfter, err := c.Settle(ctx, r, err)
	if dep != nil && err == nil && requeueAfter == 0 {
		phase, ready, reason, message := deploymentPhase(dep, c.pods.All(v.Namespace, v.Name))
		if ready == metav1.ConditionTrue {
			phase, ready, reason, message = backendHealth(status, phase, ready, reason, message)
		}
		r.Ready(phase, ready, reason, message)
	}
	return status, requeueAfter, err
}

// ensureHMACSecret makes sure the Secret of the vMCP's session HMAC key
// exists before a pod that reads it is created. The key is generated once
// and never rewritten (a new key would end every session), and the
// controller never reads a Secret: it creates one only while its
// Deployment does not yet read the key — at the first sync, or when the
// Deployment predates the key — and takes a 409 as the Secret being there
// already, such as the one ToolHive's operator created, which is kept as
// it is. A converged server sends nothing.
func (c *Controller) ensureHMACSecret(ctx context.Context, v *thv1.VirtualMCPServer) error {
	if dep, err := c.Children.Deployments.Get(v.Namespace, v.Name); err == nil && readsHMACSecret(dep, v.Name) {
		return nil
	}
	key := make([]byte, vmcp.HMACKeySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("generating the session HMAC key: %w", err)
	}
	_, err := framework.CreateChild(ctx, c.Writer, v.UID, "secrets", c.kube.CoreV1().Secrets(v.Namespace).Create, vmcp.HMACSecret(v, key))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		c.Recorder.Event(v, corev1.EventTypeNormal, reasonHMACSecretCreated, "HMAC secret created for session token binding")
	}
	return err
}

// The Normal events ToolHive's operator records for a vMCP's children,
// reasons and messages as it words them.
const (
	reasonHMACSecretCreated = "HMACSecretCreated"
	reasonDeploymentCreated = "DeploymentCreated"
	reasonDeploymentUpdated = "DeploymentUpdated"
	reasonServiceCreated    = "ServiceCreated"
)

// childChanges is what a write of the vMCP's children is about to do to
// the Deployment and the Service, as read from the caches before it.
type childChanges struct {
	deploymentMissing, deploymentDrifted, serviceMissing bool
	service                                              string
}

// lifecycle reads from the caches whether the Deployment and Service are
// missing and whether the Deployment differs from want, so that the
// events ToolHive's operator records for creating and updating them are
// recorded once the write succeeded.
func (c *Controller) lifecycle(dep *appsv1.Deployment, svc *corev1.Service) childChanges {
	var out childChanges
	have, err := c.Children.Deployments.Get(dep.Namespace, dep.Name)
	out.deploymentMissing = apierrors.IsNotFound(err)
	out.deploymentDrifted = err == nil && len(c.Children.Deployments.Diff(dep, have)) > 0
	_, err = c.Children.Services.Get(svc.Namespace, svc.Name)
	out.serviceMissing, out.service = apierrors.IsNotFound(err), svc.Name
	return out
}

func (ch childChanges) record(rec record.EventRecorder, v *thv1.VirtualMCPServer) {
	switch {
	case ch.deploymentMissing:
		rec.Event(v, corev1.EventTypeNormal, reasonDeploymentCreated, "Deployment created successfully")
	case ch.deploymentDrifted:
		rec.Event(v, corev1.EventTypeNormal, reasonDeploymentUpdated, "Deployment updated, rolling out new configuration")
	}
	if ch.serviceMissing {
		rec.Eventf(v, corev1.EventTypeNormal, reasonServiceCreated, "Service %s created successfully", ch.service)
	}
}

// readsHMACSecret reports whether a live Deployment's vmcp container reads
// the session HMAC key from the Secret of the server name.
func readsHMACSecret(dep *appsv1.Deployment, name string) bool {
	for _, ctr := range dep.Spec.Template.Spec.Containers {
		if ctr.Name != naming.VMCPContainerName {
			continue
		}
		for _, e := range ctr.Env {
			if e.Name == naming.EnvVMCPSessionHMACSecret && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
				e.ValueFrom.SecretKeyRef.Name == naming.VMCPHMACSecretName(name) {
				return true
			}
		}
	}
	return false
}

// firstName is the one name of a single reference, "" for none.
func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// groupMembers lists the members of a group of every backend kind, kind
// by kind in backendKinds order, through the group index: O(members), no
// namespace is listed.
func (c *Controller) groupMembers(namespace, group string) ([]any, error) {
	var out []any
	for _, m := range c.members {
		objs, err := m.indexer.ByIndex(index.ByGroup, index.Key(namespace, group))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// memberAuthConfigs are the MCPExternalAuthConfigs the members name in
// their own externalAuthConfigRef, by name, from the lister; a missing
// one is absent (resolveBackendAuth leaves its backend out and says so).
func (c *Controller) memberAuthConfigs(namespace string, members []any) map[string]*thv1.MCPExternalAuthConfig {
	out := map[string]*thv1.MCPExternalAuthConfig{}
	for _, obj := range members {
		name := vmcp.ViewMember(obj).AuthConfig()
		if name == "" {
			continue
		}
		if cfg, err := c.memberAuth.MCPExternalAuthConfigs(namespace).Get(name); err == nil {
			out[name] = cfg
		}
	}
	return out
}

// reportBackendAuth sets the outgoing auth conditions, ToolHive's: True
// for each strategy built, False (with one Warning event) for each that
// could not be, whose backend is left out; the conditions of strategies
// no longer asked for go.
func reportBackendAuth(r *workload.Report, current []metav1.Condition, conditions []vmcp.AuthCondition) {
	keep := map[string]bool{}
	for _, c := range conditions {
		keep[c.Type] = true
	}
	var stale []string
	for _, c := range current {
		ours := c.Type == naming.ConditionDefaultAuthConfig || strings.HasPrefix(c.Type, naming.ConditionBackendAuthConfigPrefix) ||
			strings.HasPrefix(c.Type, naming.ConditionDiscoveredAuthConfigPrefix)
		if ours && !keep[c.Type] {
			stale = append(stale, c.Type)
		}
	}
	for _, t := range stale {
		r.Remove(t)
	}
	for _, c := range conditions {
		if c.OK {
			r.Set(c.Type, metav1.ConditionTrue, c.Reason, c.Message)
		} else {
			r.SetFalse(c.Type, c.Reason, c.Message)
		}
	}
}

// embeddingServer is the EmbeddingServer spec.embeddingServerRef names,
// from the lister; nil for none or a missing one.
func (c *Controller) embeddingServer(v *thv1.VirtualMCPServer) *thv1.EmbeddingServer {
	if v.Spec.EmbeddingServerRef == nil {
		return nil
	}
	e, err := c.embeddings.EmbeddingServers(v.Namespace).Get(v.Spec.EmbeddingServerRef.Name)
	if err != nil {
		return nil
	}
	return e
}
