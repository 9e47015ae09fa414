package workload

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// AuthzFiles reads the content of the ConfigMaps workloads name: the
// authorization files of an authzConfig of type configMap, and the CA
// bundles of an embedded authorization server (AuthServerCA). The
// ConfigMap cache holds a
// user's ConfigMap as its metadata and keys only (framework.TrimForeign),
// so the data is read from the API server, once per version of the
// ConfigMap: the cache says which version is current, and a workload
// whose ConfigMap has not changed costs no API call. The ConfigMap
// handler (Handler) re-syncs the workloads naming a ConfigMap when it
// appears, changes or goes, and forgets what was read of it when it goes.
type AuthzFiles struct {
	kube   kubernetes.Interface
	cached func(namespace, name string) (*corev1.ConfigMap, error)
	mu     sync.Mutex
	read   map[string]readConfigMap
}

// readConfigMap is the data of one version of a ConfigMap.
type readConfigMap struct {
	resourceVersion string
	data            map[string]string
	binary          map[string][]byte
}

// NewAuthzFiles reads through kube, with cached the ConfigMap cache.
func NewAuthzFiles(kube kubernetes.Interface, cached func(namespace, name string) (*corev1.ConfigMap, error)) *AuthzFiles {
	return &AuthzFiles{kube: kube, cached: cached, read: map[string]readConfigMap{}}
}

// data returns the data of ConfigMap namespace/name, found=false when it
// does not exist. A version already read is not read again; a version
// without resourceVersion (never one the API server wrote) always is.
func (a *AuthzFiles) data(ctx context.Context, namespace, name string) (data map[string]string, found bool, err error) {
	r, found, err := a.configMap(ctx, namespace, name)
	return r.data, found, err
}

// configMap returns the data and binary data of ConfigMap namespace/name
// as data does.
func (a *AuthzFiles) configMap(ctx context.Context, namespace, name string) (readConfigMap, bool, error) {
	cm, err := a.cached(namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return readConfigMap{}, false, nil
	case err != nil:
		return readConfigMap{}, false, err
	}
	key := index.Key(namespace, name)
	a.mu.Lock()
	r, ok := a.read[key]
	a.mu.Unlock()
	if ok && r.resourceVersion != "" && r.resourceVersion == cm.ResourceVersion {
		return r, true, nil
	}
	live, err := a.kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return readConfigMap{}, false, nil
	case err != nil:
		return readConfigMap{}, false, fmt.Errorf("reading the ConfigMap %s/%s: %w", namespace, name, err)
	}
	r = readConfigMap{resourceVersion: live.ResourceVersion, data: live.Data, binary: live.BinaryData}
	a.mu.Lock()
	a.read[key] = r
	a.mu.Unlock()
	return r, true, nil
}

// forget drops what was read of ConfigMap namespace/name.
func (a *AuthzFiles) forget(namespace, name string) {
	a.mu.Lock()
	delete(a.read, index.Key(namespace, name))
	a.mu.Unlock()
}

// AuthzFileProblem is why an authorization file cannot be used: a reason
// of ToolHive's (ReasonAuthzConfigMapNotFound or Invalid) and its message.
type AuthzFileProblem struct {
	Reason, Message string
	// NotFound: the ConfigMap does not exist.
	NotFound bool
}

// Read reads and checks the authorization file of authz when its type is
// configMap (nil, nil, nil otherwise), as ToolHive's operator does: the
// ConfigMap must exist and hold the key, not empty, a file the runner
// loads; with cedarOnly (an MCPRemoteProxy, a VirtualMCPServer), a Cedar
// one. A file that cannot be used is a problem, not an error; an error is
// a failed read, to retry.
func (a *AuthzFiles) Read(ctx context.Context, namespace string, authz *thv1.InlineAuthz, cedarOnly bool) (*wiring.AuthzFile, *AuthzFileProblem, error) {
	name := wiring.AuthzFromConfigMap(authz)
	if name == "" {
		return nil, nil, nil
	}
	invalid := func(format string, args ...any) *AuthzFileProblem {
		return &AuthzFileProblem{Reason: thv1.ReasonAuthzConfigMapInvalid, Message: fmt.Sprintf(format, args...)}
	}
	data, found, err := a.data(ctx, namespace, name)
	if err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, &AuthzFileProblem{Reason: thv1.ReasonAuthzConfigMapNotFound, NotFound: true,
			Message: fmt.Sprintf("failed to get Authz ConfigMap %s/%s: ConfigMap %q not found", namespace, name, name)}, nil
	}
	key := wiring.AuthzFileKey(authz.ConfigMap)
	raw, ok := data[key]
	if !ok {
		return nil, invalid("authz ConfigMap %s/%s is missing key %q", namespace, name, key), nil
	}
	f, err := wiring.ParseAuthzFile(namespace, name, key, raw)
	if err != nil {
		return nil, invalid("%v", err), nil
	}
	if cedarOnly {
		if _, err := f.CedarOptions(); err != nil {
			return nil, invalid("authz ConfigMap %s/%s is not a Cedar config: %v", namespace, name, err), nil
		}
	}
	return f, nil, nil
}

// Handler is the ConfigMap informer's handler that re-syncs, through
// enqueue, the workloads of primary (by the reference index) naming a
// ConfigMap as their authorization file when it is added, changes (a new
// resourceVersion; a resync is none) or is deleted.
func (a *AuthzFiles) Handler(primary cache.Indexer, enqueue func(cache.ObjectName)) cache.ResourceEventHandlerFuncs {
	referrers := func(obj any) {
		EnqueueReferrers(primary, index.ByAuthzConfigMap, obj, enqueue)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: referrers,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := framework.MetaFromObj(oldObj)
			n, ok2 := framework.MetaFromObj(newObj)
			if ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			referrers(newObj)
		},
		DeleteFunc: func(obj any) {
			if m, ok := framework.MetaFromObj(obj); ok {
				a.forget(m.GetNamespace(), m.GetName())
			}
			referrers(obj)
		},
	}
}
