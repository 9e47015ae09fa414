package mcpserverentry

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// observed is what an entry's checks read of other objects, from the
// listers: the group (nil when missing), whether the auth config
// exists, and whether the CA bundle ConfigMap exists.
type observed struct {
	group         *thv1.MCPGroup
	authConfigSet bool
	authConfig    bool
	caBundle      bool
}

// check is one condition an entry reports: ok false fails the entry.
type check struct {
	condType, reason, message string
	status                    metav1.ConditionStatus
	ok                        bool
}

// checks runs ToolHive's checks of an entry, in ToolHive's order.
func checks(e *thv1.MCPServerEntry, o observed) []check {
	var out []check
	if err := wiring.CheckRemoteURL(e.Spec.RemoteURL, e.Spec.AllowPrivateEndpoint); err != nil {
		out = append(out, check{thv1.ConditionRemoteURLValidated, thv1.ReasonRemoteURLInvalid, "spec." + err.Error(), metav1.ConditionFalse, false})
	} else {
		out = append(out, check{thv1.ConditionRemoteURLValidated, thv1.ReasonRemoteURLValid, "Remote URL is valid", metav1.ConditionTrue, true})
	}

	group := groupName(e)
	switch {
	case o.group == nil:
		out = append(out, check{thv1.ConditionGroupRefValidated, thv1.ReasonGroupRefNotFound,
			fmt.Sprintf("MCPGroup %q not found in namespace %q", group, e.Namespace), metav1.ConditionFalse, false})
	case o.group.DeletionTimestamp != nil:
		// What ToolHive's group controller writes on its members as it
		// deletes the group; here the entry's own controller does.
		out = append(out, check{thv1.ConditionGroupRefValidated, thv1.ReasonGroupRefNotFound, thv1.MessageGroupBeingDeleted, metav1.ConditionFalse, false})
	case o.group.Status.Phase != thv1.MCPGroupPhaseReady:
		out = append(out, check{thv1.ConditionGroupRefValidated, thv1.ReasonGroupRefNotReady,
			fmt.Sprintf("MCPGroup %q is not ready (current phase: %s)", group, o.group.Status.Phase), metav1.ConditionFalse, false})
	default:
		out = append(out, check{thv1.ConditionGroupRefValidated, thv1.ReasonGroupRefValidated, "Referenced MCPGroup exists and is ready", metav1.ConditionTrue, true})
	}

	switch {
	case !o.authConfigSet:
		out = append(out, check{thv1.ConditionExternalAuthConfigValidated, thv1.ReasonAuthConfigNotConfigured, "No external auth config reference configured", metav1.ConditionTrue, true})
	case !o.authConfig:
		out = append(out, check{thv1.ConditionExternalAuthConfigValidated, thv1.ReasonAuthConfigNotFound,
			fmt.Sprintf("Referenced MCPExternalAuthConfig %q not found", e.Spec.ExternalAuthConfigRef.Name), metav1.ConditionFalse, false})
	default:
		out = append(out, check{thv1.ConditionExternalAuthConfigValidated, thv1.ReasonAuthConfigValid, "Referenced MCPExternalAuthConfig exists", metav1.ConditionTrue, true})
	}

	// ToolHive asks an entry's CA bundle ConfigMap to exist, not to hold
	// the key (a VirtualMCPServer's must hold it).
	switch {
	case e.Spec.CABundleRef == nil || e.Spec.CABundleRef.ConfigMapRef == nil:
		out = append(out, check{thv1.ConditionCABundleRefValidated, thv1.ReasonCABundleRefNotConfigured, "No CA bundle reference configured", metav1.ConditionTrue, true})
	case !o.caBundle:
		out = append(out, check{thv1.ConditionCABundleRefValidated, thv1.ReasonCABundleRefNotFound, "Referenced CA bundle ConfigMap not found", metav1.ConditionFalse, false})
	default:
		out = append(out, check{thv1.ConditionCABundleRefValidated, thv1.ReasonCABundleRefValid, "Referenced CA bundle ConfigMap exists", metav1.ConditionTrue, true})
	}
	return out
}

// caBundleName is the ConfigMap the entry's CA bundle reference names,
// "" for none.
func caBundleName(e *thv1.MCPServerEntry) string {
	if e.Spec.CABundleRef == nil || e.Spec.CABundleRef.ConfigMapRef == nil {
		return ""
	}
	return e.Spec.CABundleRef.ConfigMapRef.Name
}

// groupName is the entry's group, "" when the spec names none (the
// schema requires one).
func groupName(e *thv1.MCPServerEntry) string {
	if e.Spec.GroupRef == nil {
		return ""
	}
	return e.Spec.GroupRef.Name
}

// desiredStatus is the whole status of an entry from its checks. It starts
// from the status as read, so that conditions of other writers survive the
// merge patch (which replaces the conditions array); invalid is the
// message of the Valid condition when it is False.
func desiredStatus(e *thv1.MCPServerEntry, o observed, clk clock.PassiveClock) (status *thv1.MCPServerEntryStatus, invalid string) {
	status = e.Status.DeepCopy()
	gen := e.Generation
	status.ObservedGeneration = gen
	var failed []string
	for _, c := range checks(e, o) {
		framework.SetCondition(&status.Conditions, clk, gen, c.condType, c.status, c.reason, c.message)
		if !c.ok {
			failed = append(failed, c.message)
		}
	}
	// ToolHive's header Secret check is not made; an old condition of it
	// would be stale.
	meta.RemoveStatusCondition(&status.Conditions, "HeaderSecretRefsValidated")
	if len(failed) == 0 {
		status.Phase = thv1.MCPServerEntryPhaseValid
		framework.SetCondition(&status.Conditions, clk, gen, thv1.ConditionValid, metav1.ConditionTrue, thv1.ReasonEntryValid, "All referenced resources are valid")
		return status, ""
	}
	status.Phase = thv1.MCPServerEntryPhaseFailed
	invalid = strings.Join(failed, "; ")
	framework.SetCondition(&status.Conditions, clk, gen, thv1.ConditionValid, metav1.ConditionFalse, thv1.ReasonEntryInvalid, invalid)
	return status, invalid
}
