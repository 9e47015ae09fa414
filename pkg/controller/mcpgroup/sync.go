package mcpgroup

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// messageMembershipComputed is constant on purpose: the counts are already
// status fields, and a message that repeated them would put the whole
// conditions array into every membership patch.
const messageMembershipComputed = "Members are listed in status.servers, status.remoteProxies and status.entries"

// messageMembersListed is ToolHive's message of MCPServersChecked True.
const messageMembersListed = "Successfully listed MCPServers, MCPRemoteProxies, and MCPServerEntries in namespace"

// membership is who belongs to a group, each list sorted by name.
type membership struct {
	servers []string
	proxies []string
	entries []string
}

// sync recomputes the status of one group and writes it when it changed.
// It holds ToolHive's finalizer on the group, added before the first
// status write, and releases it when the group is deleted; the members'
// controllers report the group being deleted (workload.ResolveMemberGroup
// and the MCPServerEntry's check), as ToolHive's operator does on them,
// each the only writer of its own status.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	namespace, name := key.Namespace, key.Name
	logger := klog.FromContext(ctx).WithValues("mcpgroup", klog.KRef(namespace, name))
	ctx = klog.NewContext(ctx, logger)

	group, err := c.groups.MCPGroups(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// Nothing of the group is left to write. Its former members keep
		// their spec; their controllers report the missing group.
		return nil
	}
	if err != nil {
		return err
	}
	if c.DeferBehind(c.writer, key, group) {
		return nil
	}
	client := c.client.ToolhiveV1beta1().MCPGroups(namespace)
	if group.DeletionTimestamp != nil {
		// ToolHive writes no status on a group being deleted either.
		released, err := framework.ReleaseFinalizer(ctx, c.writer, resource, client.Patch, group, thv1.MCPGroupFinalizer, nil, nil, nil)
		if released {
			logger.V(2).Info("Released the finalizer of a group being deleted")
		}
		return err
	}
	if _, err := framework.EnsureFinalizer(ctx, c.writer, resource, client.Patch, group, thv1.MCPGroupFinalizer); err != nil {
		return err
	}

	members, memberErr := c.membership(namespace, name)
	if memberErr != nil {
		logger.Error(memberErr, "Cannot read group membership; keeping the last known lists")
	}
	status := buildStatus(group, members, memberErr, c.clock)

	patched, err := framework.PatchStatus(ctx, c.writer, resource, group, client.Patch, group.Status, status)
	if err != nil {
		return err
	}
	if patched {
		logger.V(2).Info("Updated group status", "phase", status.Phase,
			"servers", status.ServerCount, "remoteProxies", status.RemoteProxyCount, "entries", status.EntryCount)
	}
	return nil
}

// membershipError is a membership that could not be read: resource
// names the kind whose index failed as ToolHive's MCPServersChecked
// message does ("MCPServers", "MCPRemoteProxies", "MCPServerEntries").
type membershipError struct {
	resource string
	err      error
}

func (e *membershipError) Error() string {
	return fmt.Sprintf("reading %s members: %v", e.resource, e.err)
}

func (e *membershipError) Unwrap() error { return e.err }

// membership reads the members of namespace/name from the workload
// indexes. It costs O(members), whatever the size of the namespace.
func (c *Controller) membership(namespace, name string) (membership, error) {
	key := index.Key(namespace, name)
	servers, err := index.Referrers(c.servers, index.ByGroup, key)
	if err != nil {
		return membership{}, &membershipError{"MCPServers", err}
	}
	proxies, err := index.Referrers(c.proxies, index.ByGroup, key)
	if err != nil {
		return membership{}, &membershipError{"MCPRemoteProxies", err}
	}
	entries, err := index.Referrers(c.entries, index.ByGroup, key)
	if err != nil {
		return membership{}, &membershipError{"MCPServerEntries", err}
	}
	return membership{servers: servers, proxies: proxies, entries: entries}, nil
}

// buildStatus returns the whole desired status of group. It starts from a
// deep copy of the status as read because a merge patch replaces the whole
// conditions array: conditions of other types must be carried over. When
// memberErr is set the membership is unknown, so the last known lists are
// kept and the group is reported Failed instead of empty.
func buildStatus(group *thv1.MCPGroup, m membership, memberErr error, clk clock.PassiveClock) thv1.MCPGroupStatus {
	status := *group.Status.DeepCopy()
	status.ObservedGeneration = group.Generation

	if memberErr != nil {
		status.Phase = thv1.MCPGroupPhaseFailed
		framework.SetCondition(&status.Conditions, clk, group.Generation, thv1.ConditionReady,
			metav1.ConditionFalse, thv1.ReasonMembershipUnavailable, memberErr.Error())
		what := "members"
		var me *membershipError
		if errors.As(memberErr, &me) {
			what = me.resource
		}
		framework.SetCondition(&status.Conditions, clk, group.Generation, thv1.ConditionMCPServersChecked,
			metav1.ConditionFalse, thv1.ReasonListMCPServersCheckFailed, "Failed to list "+what+" in namespace")
		return status
	}

	status.Servers = nilIfEmpty(m.servers)
	status.ServerCount = int32(len(m.servers))
	status.RemoteProxies = nilIfEmpty(m.proxies)
	status.RemoteProxyCount = int32(len(m.proxies))
	status.Entries = nilIfEmpty(m.entries)
	status.EntryCount = int32(len(m.entries))
	status.Phase = thv1.MCPGroupPhaseReady
	framework.SetCondition(&status.Conditions, clk, group.Generation, thv1.ConditionReady,
		metav1.ConditionTrue, thv1.ReasonMembershipComputed, messageMembershipComputed)
	framework.SetCondition(&status.Conditions, clk, group.Generation, thv1.ConditionMCPServersChecked,
		metav1.ConditionTrue, thv1.ReasonListMCPServersCheckSucceeded, messageMembersListed)
	return status
}

// nilIfEmpty makes an empty list nil, the form the API server returns for an
// omitted field, so the status compares equal to what was read back.
func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
