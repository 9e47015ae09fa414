package workload

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// AuthServerRefOf is the spec.authServerRef of a workload kind that has
// one; nil otherwise.
func AuthServerRefOf(obj any) *thv1.AuthServerRef {
	switch o := obj.(type) {
	case *thv1.MCPServer:
		return o.Spec.AuthServerRef
	case *thv1.MCPRemoteProxy:
		return o.Spec.AuthServerRef
	}
	return nil
}

// resolveAuthServer resolves spec.authServerRef from the lister. It leaves
// AuthServerRefValidated alone when the config is usable: whether it is
// valid for this workload is known only once it is built (see
// EmbeddedAuthServer and AuthServerValid), and setting True here for the
// build to set False would change the condition's transition time on
// every sync. A kind other than MCPExternalAuthConfig fails the workload.
func (b *Base) resolveAuthServer(r *Report, obj Object) (*thv1.MCPExternalAuthConfig, string, bool) {
	c := b.AuthServer
	ref := AuthServerRefOf(obj)
	switch {
	case ref == nil:
		r.Remove(c.Condition)
		return nil, "", true
	case ref.Kind != thv1.KindMCPExternalAuthConfig:
		msg := fmt.Sprintf("spec.authServerRef.kind %q is not supported: only %s is", ref.Kind, thv1.KindMCPExternalAuthConfig)
		r.Set(c.Condition, metav1.ConditionFalse, thv1.ReasonAuthServerRefInvalidKind, msg)
		r.Fail(thv1.ReasonAuthServerRefInvalidKind, msg)
		return nil, "", false
	}
	cfg, err := c.Get(c.informer.Indexer(), obj.GetNamespace(), ref.Name)
	ok, reason, message := c.check(ref.Name, cfg, err == nil)
	if !ok {
		r.SetFalse(c.Condition, reason, message)
		r.Unusable(c.Waiting, message)
		return nil, "", false
	}
	return cfg, cfg.GetStatus().ConfigHash, true
}

// AuthServerValid sets AuthServerRefValidated True once a workload that
// references an authorization server was built with it.
func AuthServerValid(r *Report, ref *thv1.AuthServerRef) {
	if ref != nil {
		r.Set(thv1.ConditionAuthServerRefValidated, metav1.ConditionTrue, thv1.ReasonAuthServerRefValid,
			fmt.Sprintf("%s %q is valid", thv1.KindMCPExternalAuthConfig, ref.Name))
	}
}
