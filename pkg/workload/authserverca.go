package workload

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// CAProblem is why a CA bundle an embedded authorization server names
// cannot be used, in ToolHive's words, prefixed with the bundle's field:
// Invalid for a malformed reference, a missing key or content that is
// not PEM certificates (ToolHive's InvalidCABundle, a spec error),
// otherwise the ConfigMap does not exist, which its creation fixes.
type CAProblem struct {
	Message string
	Invalid bool
}

// AuthServerCA reads the CA bundles an embedded authorization server
// names (cfg, nil for none) from their ConfigMaps in namespace, checks
// them as ToolHive's operator does, in its order, and returns the
// checksum of their content for the pod template
// (wiring.AuthServerCAChecksum), "" without bundles. A bundle that cannot
// be used is a problem, not an error; an error is a failed read, to
// retry.
func (a *AuthzFiles) AuthServerCA(ctx context.Context, namespace string, cfg *thv1.EmbeddedAuthServerConfig) (string, *CAProblem, error) {
	bundles := wiring.AuthServerCABundles(cfg)
	content := make([][]byte, len(bundles))
	for i, b := range bundles {
		invalid := func(format string, args ...any) *CAProblem {
			return &CAProblem{Message: b.Field + ": " + fmt.Sprintf(format, args...), Invalid: true}
		}
		if p := wiring.CABundleRefProblem(b.Ref); p != "" {
			return "", invalid("%s", p), nil
		}
		name, key := b.Ref.ConfigMapRef.Name, wiring.CABundleKey(b.Ref.ConfigMapRef)
		cm, found, err := a.configMap(ctx, namespace, name)
		if err != nil {
			return "", nil, err
		}
		if !found {
			return "", &CAProblem{Message: fmt.Sprintf("%s: failed to get CA bundle ConfigMap %q in namespace %q: configmaps %q not found",
				b.Field, name, namespace, name)}, nil
		}
		value, ok := cm.binary[key]
		if s, inData := cm.data[key]; inData {
			value, ok = []byte(s), true
		}
		if !ok {
			return "", invalid("CA bundle ConfigMap %q does not contain key %q in data or binaryData", name, key), nil
		}
		if err := wiring.CheckPEMCertificates(value); err != nil {
			return "", invalid("CA bundle ConfigMap %q key %q is invalid: %v", name, key, err), nil
		}
		content[i] = value
	}
	return wiring.AuthServerCAChecksum(bundles, content), nil, nil
}

// EmbeddedAuthServerOf is the embedded authorization server a proxy
// workload runs, as ToolHive's operator chooses it: that of the
// MCPExternalAuthConfig spec.authServerRef names, else that of
// spec.externalAuthConfigRef when its type is embeddedAuthServer; nil for
// none. authServerRef says which reference it came through.
func EmbeddedAuthServerOf(authServer, extAuth *thv1.MCPExternalAuthConfig) (cfg *thv1.EmbeddedAuthServerConfig, authServerRef bool) {
	switch {
	case authServer != nil:
		return authServer.Spec.EmbeddedAuthServer, true
	case extAuth != nil && extAuth.Spec.Type == thv1.ExternalAuthTypeEmbeddedAuthServer:
		return extAuth.Spec.EmbeddedAuthServer, false
	}
	return nil, false
}

// namesCABundle says whether cfg names ConfigMap name as a CA bundle.
func namesCABundle(cfg *thv1.EmbeddedAuthServerConfig, name string) bool {
	return slices.Contains(index.AuthServerCAConfigMaps(cfg), name)
}

// AuthServerCAHandler is the ConfigMap handler that re-syncs the
// workloads whose embedded authorization server names the ConfigMap as a
// CA bundle when it is added, changes (a new resourceVersion: its content
// is hashed into the pod template) or is deleted: a VirtualMCPServer's
// own (spec.authServerConfig, by the reference index), and the
// MCPServers and MCPRemoteProxies referencing an MCPExternalAuthConfig
// that names it.
func (b *Base) AuthServerCAHandler() cache.ResourceEventHandlerFuncs {
	extAuth := b.ExtAuth.informer.Indexer()
	named := func(obj any) {
		m, ok := framework.MetaFromObj(obj)
		if !ok {
			return
		}
		if framework.IsWorkloadChild(m) {
			return // a child (a RunConfig) is no one's CA bundle
		}
		ns, name := m.GetNamespace(), m.GetName()
		EnqueueReferrers(b.primary, index.ByAuthServerCAConfigMap, obj, b.EnqueueKey)
		if _, ok := b.row.Refs[index.ByAuthServerRef]; !ok {
			return
		}
		inNamespace, err := extAuth.ByIndex(cache.NamespaceIndex, ns)
		if err != nil {
			return
		}
		for _, o := range inNamespace {
			cfg, ok := o.(*thv1.MCPExternalAuthConfig)
			if !ok || !namesCABundle(cfg.Spec.EmbeddedAuthServer, name) {
				continue
			}
			for _, idx := range []string{index.ByAuthServerRef, index.ByExternalAuthConfig} {
				names, err := index.Referrers(b.primary, idx, index.Key(ns, cfg.Name))
				if err != nil {
					continue
				}
				for _, n := range names {
					b.EnqueueKey(cache.NewObjectName(ns, n))
				}
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: named,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := framework.MetaFromObj(oldObj)
			n, ok2 := framework.MetaFromObj(newObj)
			if ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			named(newObj)
		},
		DeleteFunc: func(obj any) {
			if m, ok := framework.MetaFromObj(obj); ok {
				b.AuthzFiles.forget(m.GetNamespace(), m.GetName())
			}
			named(obj)
		},
	}
}

// ProxyAuthServerCA reads the CA bundles of the embedded authorization
// server a proxy workload runs (EmbeddedAuthServerOf its references) and
// returns their checksum for its pod template. A bundle that cannot be
// used fails the workload, nothing written, as ToolHive's operator
// reports it: an invalid one on the condition of the reference the
// server came through (AuthServerRefValidated or
// ExternalAuthConfigValidated, reason InvalidCABundle) and "Failed to
// build configuration"; a missing ConfigMap as Failed, until its creation
// re-syncs the workload (AuthServerCAHandler). ok is false then.
func (b *Base) ProxyAuthServerCA(ctx context.Context, r *Report, namespace string, refs ProxyRefs) (checksum string, ok bool, err error) {
	cfg, viaRef := EmbeddedAuthServerOf(refs.AuthServer, refs.ExtAuth)
	checksum, p, err := b.AuthzFiles.AuthServerCA(ctx, namespace, cfg)
	if err != nil || p == nil {
		return checksum, err == nil, err
	}
	if !p.Invalid {
		r.Fail(thv1.ReasonCABundleNotFound, p.Message)
		return "", false, nil
	}
	cond := thv1.ConditionExternalAuthConfigValidated
	if viaRef {
		cond = thv1.ConditionAuthServerRefValidated
	}
	// One Warning event, of the reference's condition; Ready=False
	// NotReady, as ToolHive's operator writes it on both kinds.
	r.SetFalse(cond, thv1.ReasonInvalidCABundle, "invalid CA bundle: "+p.Message)
	r.NotReady(r.phases.Failed, thv1.ReasonNotReady, "Failed to build configuration: "+p.Message)
	return "", false, nil
}
