package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// MaxCABundleConfigMapName is the longest CA bundle ConfigMap name whose
// volume name (wiring.CABundleVolumePrefix and the name) is a valid
// Kubernetes volume name.
const MaxCABundleConfigMapName = 63 - len(wiring.CABundleVolumePrefix)

// CABundle is what a CA bundle reference (spec.caBundleRef and the
// like) finds in the cache: the ConfigMap it names, the key (ca.crt
// unless named), whether the ConfigMap exists and whether it has the key.
// Each kind words its CABundleRefValidated condition from it as
// ToolHive's operator does for that kind.
type CABundle struct {
	Name, Key     string
	Found, HasKey bool
}

// CABundleProblem is why ref cannot be mounted, "" when it can:
// ToolHive's checks of a VirtualMCPServer's CA bundle reference, made
// before the ConfigMap is looked up.
func CABundleProblem(ref *thv1.CABundleSource) string {
	switch {
	case ref.ConfigMapRef == nil:
		return "configMapRef must be specified in caBundleRef"
	case ref.ConfigMapRef.Name == "":
		return "configMapRef.name must be specified"
	case len(ref.ConfigMapRef.Name) > MaxCABundleConfigMapName:
		return fmt.Sprintf("configMapRef.name %q is too long (%d chars); maximum is %d characters to fit in Kubernetes volume name",
			ref.ConfigMapRef.Name, len(ref.ConfigMapRef.Name), MaxCABundleConfigMapName)
	}
	return ""
}

// LookupCABundle reads the ConfigMap ref names in namespace through get
// (a ConfigMap lister's, whose copy of a user's ConfigMap keeps its keys:
// framework.TrimForeign). ref.ConfigMapRef must be set; a kind that
// checks the reference's shape (CABundleProblem) does so first. An error
// other than NotFound is returned.
func LookupCABundle(namespace string, ref *thv1.CABundleSource, get func(namespace, name string) (*corev1.ConfigMap, error)) (CABundle, error) {
	out := CABundle{Name: ref.ConfigMapRef.Name, Key: ref.ConfigMapRef.Key}
	if out.Key == "" {
		out.Key = wiring.DefaultCAKey
	}
	cm, err := get(namespace, out.Name)
	switch {
	case apierrors.IsNotFound(err):
		return out, nil
	case err != nil:
		return out, err
	}
	out.Found = true
	_, inData := cm.Data[out.Key]
	_, inBinary := cm.BinaryData[out.Key]
	out.HasKey = inData || inBinary
	return out, nil
}

// CABundleHandler is a handler for the ConfigMap informer that calls
// named with a ConfigMap's namespace and name when it is added or
// deleted or its keys change: what a CA bundle check reads of it. Other
// ConfigMap events, such as every write of a child's data, call nothing.
func CABundleHandler(named func(namespace, name string)) cache.ResourceEventHandlerFuncs {
	handle := func(obj any) {
		if m, ok := framework.MetaFromObj(obj); ok {
			named(m.GetNamespace(), m.GetName())
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		DeleteFunc: handle,
		UpdateFunc: func(oldObj, newObj any) {
			if !sameKeys(oldObj, newObj) {
				handle(newObj)
			}
		},
	}
}

// sameKeys reports whether two versions of a ConfigMap have the same keys.
func sameKeys(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*corev1.ConfigMap)
	n, ok2 := newObj.(*corev1.ConfigMap)
	if !ok1 || !ok2 || len(o.Data) != len(n.Data) || len(o.BinaryData) != len(n.BinaryData) {
		return false
	}
	for k := range n.Data {
		if _, ok := o.Data[k]; !ok {
			return false
		}
	}
	for k := range n.BinaryData {
		if _, ok := o.BinaryData[k]; !ok {
			return false
		}
	}
	return true
}

// OIDCCABundleRef is the CA bundle reference of an inline MCPOIDCConfig,
// nil for none or another type.
func OIDCCABundleRef(cfg *thv1.MCPOIDCConfig) *thv1.CABundleSource {
	if cfg == nil || cfg.Spec.Type != thv1.OIDCConfigTypeInline || cfg.Spec.Inline == nil {
		return nil
	}
	return cfg.Spec.Inline.CABundleRef
}

// OIDCCABundleCondition is CABundleRefValidated, which ToolHive v0.63.0's
// operator reports on an MCPServer, MCPRemoteProxy or VirtualMCPServer
// whose OIDC configuration (an inline MCPOIDCConfig) names a CA bundle
// ConfigMap: True when the ConfigMap has the key (ca.crt unless named),
// False with CABundleRefNotFound when there is no such ConfigMap and with
// CABundleRefInvalid for a malformed reference or a missing key; absent
// without a CA bundle. It is advisory, as ToolHive's: the workload is
// deployed all the same, and no event is recorded. cfg is the resolved
// MCPOIDCConfig (nil for none); configMap reads the namespace's
// ConfigMaps from the cache. It is checked as soon as the OIDC
// configuration resolves, so a later refusal does not hide it.
func OIDCCABundleCondition(r *Report, namespace string, cfg *thv1.MCPOIDCConfig, configMap func(namespace, name string) (*corev1.ConfigMap, error)) error {
	ref := OIDCCABundleRef(cfg)
	if ref == nil {
		r.Remove(thv1.ConditionCABundleRefValidated)
		return nil
	}
	if problem := CABundleProblem(ref); problem != "" {
		r.Set(thv1.ConditionCABundleRefValidated, metav1.ConditionFalse, thv1.ReasonCABundleRefInvalid, problem)
		return nil
	}
	b, err := LookupCABundle(namespace, ref, configMap)
	switch {
	case err != nil:
		return err
	case !b.Found:
		r.Set(thv1.ConditionCABundleRefValidated, metav1.ConditionFalse, thv1.ReasonCABundleRefNotFound,
			fmt.Sprintf("CA bundle ConfigMap '%s' not found in namespace '%s'", b.Name, namespace))
	case !b.HasKey:
		r.Set(thv1.ConditionCABundleRefValidated, metav1.ConditionFalse, thv1.ReasonCABundleRefInvalid,
			fmt.Sprintf("Key '%s' not found in ConfigMap '%s'", b.Key, b.Name))
	default:
		r.Set(thv1.ConditionCABundleRefValidated, metav1.ConditionTrue, thv1.ReasonCABundleRefValid,
			fmt.Sprintf("CA bundle ConfigMap '%s' is valid (key: %s)", b.Name, b.Key))
	}
	return nil
}

// OIDCCABundleHandler enqueues, through enqueue, the workloads of primary
// (by the reference index) that use an MCPOIDCConfig naming a ConfigMap as
// CA bundle when that ConfigMap is added or deleted or its keys change.
// Other ConfigMap events, such as every write of a child's data, enqueue
// nothing.
func OIDCCABundleHandler(oidcConfigs, primary cache.Indexer, enqueue func(cache.ObjectName)) cache.ResourceEventHandlerFuncs {
	return CABundleHandler(func(namespace, name string) {
		inNamespace, err := oidcConfigs.ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return
		}
		for _, o := range inNamespace {
			cfg, ok := o.(*thv1.MCPOIDCConfig)
			ref := OIDCCABundleRef(cfg)
			if !ok || ref == nil || ref.ConfigMapRef == nil || ref.ConfigMapRef.Name != name {
				continue
			}
			names, err := index.Referrers(primary, index.ByOIDCConfig, index.Key(cfg.Namespace, cfg.Name))
			if err != nil {
				continue
			}
			for _, n := range names {
				enqueue(cache.NewObjectName(cfg.Namespace, n))
			}
		}
	})
}
