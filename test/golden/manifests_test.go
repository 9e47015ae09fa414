package golden

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/proxy"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/vmcp"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// goldenNamespace is the namespace every golden manifest is read into.
const goldenNamespace = "golden"

// runnerImage and vmcpImage are the images golden builds run.
const (
	runnerImage      = "ghcr.io/stacklok/toolhive/proxyrunner:golden"
	vmcpImage        = "ghcr.io/stacklok/toolhive/vmcp:golden"
	registryAPIImage = "ghcr.io/stacklok/thv-registry-api:golden"
)

// updateEnv, set to 1, makes the golden tests rewrite their files
// instead of comparing with them.
const updateEnv = "HIVEKEEPER_UPDATE_GOLDEN"

// workloadCase is one workload of a golden manifest set with the
// references it makes resolved from the set into its builder's Input, as
// the controllers resolve them from their listers (every config counts as
// valid, every entry as checked). Missing names a reference the set does
// not hold: the controller would wait for it, so nothing is built.
type workloadCase struct {
	// Dir is where its files are recorded, under testdata.
	Dir     string
	Obj     runtime.Object
	Proxy   proxy.Input
	VMCP    vmcp.Input
	Missing string
}

// goldenSet is a set of manifests applied together.
type goldenSet struct {
	dir   string // under test/golden/testdata
	files []string
	// defaultRedis is the controller's --default-redis-*, for its
	// workloads.
	defaultRedis *wiring.DefaultRedis
}

// v063DefaultRedis are the v063/ files built with a default Redis: its
// address, a password Secret, TLS verified with a CA Secret.
var v063DefaultRedis = map[string]*wiring.DefaultRedis{
	"03-default-redis": {Addr: "redis.infra:6379", SecretName: "redis-default", SecretKey: "redis-password",
		TLS: &thv1.RedisTLSConfig{CACertSecretRef: &thv1.SecretKeyRef{Name: "redis-default-ca", Key: "ca.crt"}}},
}

// goldenSets are the conformance table's manifests, one set each, the
// manifests of v063/, one set each (fields ToolHive v0.63.0 added, which
// the runtime-oracle release's binaries the conformance table runs do not
// read), and examples/ as one set.
func goldenSets(t testing.TB) []goldenSet {
	table, err := filepath.Glob(filepath.Join("..", "conformance", "testdata", "table", "*.yaml"))
	if err != nil || len(table) == 0 {
		t.Fatalf("no table manifests: %v", err)
	}
	var sets []goldenSet
	for _, f := range table {
		sets = append(sets, goldenSet{dir: filepath.Join("table", strings.TrimSuffix(filepath.Base(f), ".yaml")), files: []string{f}})
	}
	v063, err := filepath.Glob(filepath.Join("v063", "*.yaml"))
	if err != nil || len(v063) == 0 {
		t.Fatalf("no v063 manifests: %v", err)
	}
	for _, f := range v063 {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		sets = append(sets, goldenSet{dir: filepath.Join("v063", name), files: []string{f}, defaultRedis: v063DefaultRedis[name]})
	}
	examples, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	return append(sets, goldenSet{dir: "examples", files: examples})
}

// goldenScheme decodes the built-in kinds and ToolHive's.
func goldenScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := thv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// decodeSet reads every object of a set into goldenNamespace.
func decodeSet(t testing.TB, set goldenSet) []runtime.Object {
	t.Helper()
	decoder := serializer.NewCodecFactory(goldenScheme()).UniversalDeserializer()
	var objs []runtime.Object
	for _, f := range set.files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil || string(j) == "null" {
				continue // comments only
			}
			// ToolHive serves MCPWebhookConfig as v1alpha1 too, with
			// the same schema; hivekeeper stores it as v1beta1.
			j = bytes.Replace(j, []byte(`"apiVersion":"`+thv1.GroupName+`/v1alpha1"`), []byte(`"apiVersion":"`+thv1.SchemeGroupVersion.String()+`"`), 1)
			obj, _, err := decoder.Decode(j, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			m, err := meta.Accessor(obj)
			if err != nil {
				t.Fatal(err)
			}
			// What the API server sets on a new object, fixed.
			m.SetNamespace(goldenNamespace)
			m.SetUID(types.UID("uid-" + m.GetName()))
			m.SetGeneration(1)
			if e, ok := obj.(*thv1.MCPServerEntry); ok {
				// The entry controller's verdict on an entry whose checks pass.
				e.Status.Phase = thv1.MCPServerEntryPhaseValid
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

// workloadsOf are the workloads of kind in every golden set, with
// their references resolved.
func workloadsOf(t testing.TB, kind string) []workloadCase {
	t.Helper()
	var out []workloadCase
	for _, set := range goldenSets(t) {
		objs := decodeSet(t, set)
		for _, obj := range objs {
			if kindOf(obj) != kind {
				continue
			}
			m, _ := meta.Accessor(obj)
			w := workloadCase{Dir: filepath.Join(set.dir, kind+"-"+m.GetName()), Obj: obj}
			resolveGolden(&w, objs)
			w.Proxy.DefaultRedis, w.VMCP.DefaultRedis = set.defaultRedis, set.defaultRedis
			out = append(out, w)
		}
	}
	return out
}

func kindOf(obj runtime.Object) string {
	gvks, _, err := goldenScheme().ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return ""
	}
	return gvks[0].Kind
}

// find returns the object of kind and name in objs.
func find[T runtime.Object](objs []runtime.Object, name string) (T, bool) {
	for _, o := range objs {
		if t, ok := o.(T); ok {
			if m, _ := meta.Accessor(o); m.GetName() == name {
				return t, true
			}
		}
	}
	var zero T
	return zero, false
}

// resolveGolden resolves w's references from objs, reading the names as
// the reference index reads them.
func resolveGolden(w *workloadCase, objs []runtime.Object) {
	kind := kindOf(w.Obj)
	row, _ := index.WorkloadFor(kind)
	names := func(idx string, obj any) []string {
		if read, ok := row.Refs[idx]; ok {
			return read(obj)
		}
		return nil
	}
	first := func(idx string) string {
		if n := names(idx, w.Obj); len(n) > 0 {
			return n[0]
		}
		return ""
	}
	missing := func(k, name string) {
		if w.Missing == "" {
			w.Missing = fmt.Sprintf("%s %q is not in the manifests", k, name)
		}
	}
	one := func(idx, k string, into any) {
		name := first(idx)
		if name == "" {
			return
		}
		if !resolveInto(objs, name, into) {
			missing(k, name)
		}
	}
	// An authorization file is read from its ConfigMap in the set, as
	// the controllers read it.
	authzFile := func() *wiring.AuthzFile {
		name := first(index.ByAuthzConfigMap)
		if name == "" {
			return nil
		}
		cm, ok := find[*corev1.ConfigMap](objs, name)
		if !ok {
			missing("ConfigMap", name)
			return nil
		}
		var ref *thv1.InlineAuthz
		switch o := w.Obj.(type) {
		case *thv1.MCPServer:
			ref = o.Spec.AuthzConfig
		case *thv1.MCPRemoteProxy:
			ref = o.Spec.AuthzConfig
		case *thv1.VirtualMCPServer:
			ref = o.Spec.IncomingAuth.AuthzConfig
		}
		key := wiring.AuthzFileKey(ref.ConfigMap)
		f, err := wiring.ParseAuthzFile(cm.Namespace, name, key, cm.Data[key])
		if err != nil && w.Missing == "" {
			w.Missing = err.Error()
		}
		return f
	}
	// The checksum of an embedded authorization server's CA bundles, read
	// from their ConfigMaps in the set, as the controllers read them.
	authServerCA := func(cfg *thv1.EmbeddedAuthServerConfig) string {
		bundles := wiring.AuthServerCABundles(cfg)
		content := make([][]byte, len(bundles))
		for i, b := range bundles {
			if b.Ref.ConfigMapRef == nil {
				return ""
			}
			cm, ok := find[*corev1.ConfigMap](objs, b.Ref.ConfigMapRef.Name)
			if !ok {
				missing("ConfigMap", b.Ref.ConfigMapRef.Name)
				return ""
			}
			content[i] = []byte(cm.Data[wiring.CABundleKey(b.Ref.ConfigMapRef)])
		}
		return wiring.AuthServerCAChecksum(bundles, content)
	}
	if v, ok := w.Obj.(*thv1.VirtualMCPServer); ok {
		w.VMCP.AuthzFile = authzFile()
		w.VMCP.AuthServerCAChecksum = authServerCA(v.Spec.AuthServerConfig)
		if v.Spec.IncomingAuth.Type == thv1.IncomingAuthOIDC && v.Spec.IncomingAuth.OIDCConfigRef != nil {
			if name := v.Spec.IncomingAuth.OIDCConfigRef.Name; name != "" && !resolveInto(objs, name, &w.VMCP.OIDC) {
				missing(thv1.KindMCPOIDCConfig, name)
			}
		}
		one(index.ByAuthzConfig, thv1.KindMCPAuthzConfig, &w.VMCP.Authz)
		one(index.ByTelemetryConfig, thv1.KindMCPTelemetryConfig, &w.VMCP.Telemetry)
		w.VMCP.Tools = resolveAll[*thv1.MCPToolConfig](objs, names(index.ByToolConfig, w.Obj), missing, thv1.KindMCPToolConfig)
		w.VMCP.ExtAuth = resolveAll[*thv1.MCPExternalAuthConfig](objs, names(index.ByExternalAuthConfig, w.Obj), missing, thv1.KindMCPExternalAuthConfig)
		w.VMCP.CompositeTools = resolveAll[*thv1.VirtualMCPCompositeToolDefinition](objs, names(index.ByCompositeToolDefinition, w.Obj), missing,
			thv1.KindVirtualMCPCompositeToolDefinition)
		// An EmbeddingServer of the set counts as ready, at its URL.
		if name := first(index.ByEmbeddingServer); name != "" {
			if e, ok := find[*thv1.EmbeddingServer](objs, name); ok {
				w.VMCP.EmbeddingService = naming.EmbeddingServerURL(e)
			} else {
				missing(thv1.KindEmbeddingServer, name)
			}
		}
		w.VMCP.MemberAuth = map[string]*thv1.MCPExternalAuthConfig{}
		for _, memberKind := range []string{thv1.KindMCPServer, thv1.KindMCPRemoteProxy, thv1.KindMCPServerEntry} {
			member, _ := index.WorkloadFor(memberKind)
			for _, o := range objs {
				if kindOf(o) != memberKind || !slices.Equal(member.Refs[index.ByGroup](o), []string{v.Spec.GroupRef.Name}) {
					continue
				}
				w.VMCP.Members = append(w.VMCP.Members, o)
				for _, n := range member.Refs[index.ByExternalAuthConfig](o) {
					if cfg, ok := find[*thv1.MCPExternalAuthConfig](objs, n); ok {
						w.VMCP.MemberAuth[n] = cfg
					}
				}
			}
		}
		return
	}
	in := &w.Proxy
	in.AuthzFile = authzFile()
	one(index.ByOIDCConfig, thv1.KindMCPOIDCConfig, &in.OIDC)
	one(index.ByToolConfig, thv1.KindMCPToolConfig, &in.Tools)
	one(index.ByAuthzConfig, thv1.KindMCPAuthzConfig, &in.Authz)
	one(index.ByExternalAuthConfig, thv1.KindMCPExternalAuthConfig, &in.ExtAuth)
	one(index.ByTelemetryConfig, thv1.KindMCPTelemetryConfig, &in.Telemetry)
	one(index.ByWebhookConfig, thv1.KindMCPWebhookConfig, &in.Webhooks)
	var ref *thv1.AuthServerRef
	switch o := w.Obj.(type) {
	case *thv1.MCPServer:
		ref = o.Spec.AuthServerRef
	case *thv1.MCPRemoteProxy:
		ref = o.Spec.AuthServerRef
	}
	if ref != nil {
		if ref.Kind != thv1.KindMCPExternalAuthConfig {
			w.Missing = fmt.Sprintf("spec.authServerRef.kind %q is refused", ref.Kind)
		} else if !resolveInto(objs, ref.Name, &in.AuthServer) {
			missing(thv1.KindMCPExternalAuthConfig, ref.Name)
		}
	}
	cfg, _ := workload.EmbeddedAuthServerOf(in.AuthServer, in.ExtAuth)
	in.AuthServerCAChecksum = authServerCA(cfg)
}

// resolveInto sets *into (a pointer to a typed object pointer) to the
// object of that type named name.
func resolveInto(objs []runtime.Object, name string, into any) bool {
	switch p := into.(type) {
	case **thv1.MCPOIDCConfig:
		*p, _ = find[*thv1.MCPOIDCConfig](objs, name)
		return *p != nil
	case **thv1.MCPToolConfig:
		*p, _ = find[*thv1.MCPToolConfig](objs, name)
		return *p != nil
	case **thv1.MCPAuthzConfig:
		*p, _ = find[*thv1.MCPAuthzConfig](objs, name)
		return *p != nil
	case **thv1.MCPExternalAuthConfig:
		*p, _ = find[*thv1.MCPExternalAuthConfig](objs, name)
		return *p != nil
	case **thv1.MCPTelemetryConfig:
		*p, _ = find[*thv1.MCPTelemetryConfig](objs, name)
		return *p != nil
	case **thv1.MCPWebhookConfig:
		*p, _ = find[*thv1.MCPWebhookConfig](objs, name)
		return *p != nil
	}
	panic(fmt.Sprintf("resolveInto: %T", into))
}

func resolveAll[T runtime.Object](objs []runtime.Object, names []string, missing func(kind, name string), kind string) map[string]T {
	if len(names) == 0 {
		return nil
	}
	out := map[string]T{}
	for _, n := range names {
		o, ok := find[T](objs, n)
		if !ok {
			missing(kind, n)
			continue
		}
		out[n] = o
	}
	return out
}

// recordChild records a built child (none when nil) as
// <dir>/<Kind>.<name>.yaml, its YAML.
func recordChild(t testing.TB, files map[string][]byte, dir string, obj runtime.Object) {
	t.Helper()
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	files[filepath.Join(dir, reflect.TypeOf(obj).Elem().Name()+"."+m.GetName()+".yaml")] = toYAML(t, obj)
}

// toYAML is v as recorded: its YAML.
func toYAML(t testing.TB, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordError is a build error as recorded: the condition, reason and
// message of an InvalidSpecError, or the error's text.
func recordError(err error) []byte {
	var invalid *wiring.InvalidSpecError
	if errors.As(err, &invalid) {
		return fmt.Appendf(nil, "%s %s: %s\n", invalid.Condition, invalid.Reason, invalid.Message)
	}
	return fmt.Appendf(nil, "%v\n", err)
}

// checkRecorded compares files (path under testdata → content) with the
// recorded ones, or records them when updateEnv is 1. Every recorded file
// must be built: a stale recording fails too.
func checkRecorded(t *testing.T, files map[string][]byte) {
	t.Helper()
	const dir = "testdata"
	var recorded []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		recorded = append(recorded, rel)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if os.Getenv(updateEnv) == "1" {
		for _, rel := range recorded {
			if _, ok := files[rel]; !ok {
				if err := os.Remove(filepath.Join(dir, rel)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for rel, b := range files {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("recorded %d files", len(files))
		return
	}
	for _, rel := range recorded {
		if _, ok := files[rel]; !ok {
			t.Errorf("%s is recorded but no longer built", rel)
		}
	}
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, rel := range keys {
		want, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Errorf("%s: not recorded (%s=1 records it)", rel, updateEnv)
			continue
		}
		if got := files[rel]; !bytes.Equal(got, want) {
			t.Errorf("%s differs from the recording:\n--- recorded\n%s\n--- built\n%s", rel, want, got)
		}
	}
}
