// Package toolhivekeys_test proves that every key hivekeeper writes into a
// file ToolHive's runtime reads exists in ToolHive's own types: the proxy
// runner's RunConfig (runconfig.json), the vMCP's config.yaml and the
// embedded authorization server's authserver-config.yaml. ToolHive's Go
// types are read with go/parser from the source of the pinned releases
// (hack/toolhive-source.sh downloads them, and the modules their types come
// from, into the Go module cache; nothing is copied here) and turned into
// the tree of keys each type accepts. The test fails naming the key, and
// the file that has it, when hivekeeper writes one ToolHive does not know.
//
// What hivekeeper writes is taken from two places: every file test/golden
// recorded (the builders' output for the conformance table and examples),
// and hivekeeper's own types of those files with every field set, which is
// every key it can write. It also proves that the API release (v0.63.0)
// removed or renamed no key of the runtime-oracle release (v0.47.0): a
// config written for one is read by the other.
package toolhivekeys_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

const (
	toolhiveModule = "github.com/stacklok/toolhive"
	coreModule     = "github.com/stacklok/toolhive-core"
)

// file is one kind of file ToolHive's runtime reads: its root type and the
// struct tag that names its keys.
type file struct {
	name, pkg, typ, tag string
}

var (
	runConfig   = file{"runconfig.json", toolhiveModule + "/pkg/runner", "RunConfig", "json"}
	vmcpConfig  = file{"config.yaml", toolhiveModule + "/pkg/vmcp/config", "Config", "yaml"}
	authServer  = file{"authserver-config.yaml", toolhiveModule + "/pkg/authserver", "RunConfig", "yaml"}
	toolhiveFor = []file{runConfig, vmcpConfig, authServer}
)

// trees are the key trees of a release's files, by file name, built once.
type trees map[string]*node

var (
	treesMu    sync.Mutex
	treesCache = map[string]trees{}
)

// releaseTrees reads release's source (framework.ToolHiveAPIRelease or
// ToolHiveRuntimeRelease) and the toolhive-core its go.mod requires, and
// builds the tree of each file. Under -short it skips: the first run
// downloads the sources.
func releaseTrees(t *testing.T, release string) (string, trees) {
	t.Helper()
	if testing.Short() {
		t.Skip("toolhivekeys: reads ToolHive's source from the Go module cache, skipped with -short")
	}
	treesMu.Lock()
	defer treesMu.Unlock()
	version, dir, err := framework.ToolHiveSource(release)
	if err != nil {
		t.Fatal(err)
	}
	if tr, ok := treesCache[version]; ok {
		return version, tr
	}
	coreVersion, err := requiredVersion(filepath.Join(dir, "go.mod"), coreModule)
	if err != nil {
		t.Fatal(err)
	}
	// A version the Go module proxy does not serve is built from its
	// served neighbour (hack/toolhive-build/<release>/go.mod replaces it).
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	coreVersion = servedVersion(filepath.Join(root, "hack", "toolhive-build", version, "go.mod"), coreModule, coreVersion)
	coreDir, err := framework.GoModuleSource(coreModule, coreVersion)
	if err != nil {
		t.Fatal(err)
	}
	modules := map[string]string{toolhiveModule: dir, coreModule: coreDir}
	tr := trees{}
	for _, f := range toolhiveFor {
		n, err := newLoader(f.tag, modules).typeNode(f.pkg, f.typ)
		if err != nil {
			t.Fatalf("%s %s: %v", version, f.name, err)
		}
		if len(n.fields) == 0 {
			t.Fatalf("%s %s: %s.%s has no keys: the type moved?", version, f.name, f.pkg, f.typ)
		}
		tr[f.name] = n
	}
	treesCache[version] = tr
	return version, tr
}

// requiredVersion is the version of module that a go.mod requires.
func requiredVersion(goMod, module string) (string, error) {
	f, err := os.Open(goMod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(s.Text()), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", goMod, module)
}

// servedVersion is the version goMod replaces module@want with, want
// when it has no such replace (or there is no such file).
func servedVersion(goMod, module, want string) string {
	raw, err := os.ReadFile(goMod)
	if err != nil {
		return want
	}
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "replace "))
		if len(fields) == 5 && fields[0] == module && fields[1] == want && fields[2] == "=>" && fields[3] == module {
			return fields[4]
		}
	}
	return want
}

// decode reads a file of f's kind as generic maps and slices.
func decode(f file, raw []byte) (any, error) {
	var v any
	if f.tag == "yaml" {
		return v, yaml.Unmarshal(raw, &v)
	}
	return v, json.Unmarshal(raw, &v)
}

// Every key of every file test/golden recorded is a key of ToolHive's type
// at the API release. The embedded authorization server's block of a
// RunConfig is checked by the RunConfig's tree, which holds the same type.
func TestGoldenFilesUseOnlyToolHiveKeys(t *testing.T) {
	version, tr := releaseTrees(t, framework.ToolHiveAPIRelease)
	byName := map[string]file{}
	for _, f := range toolhiveFor {
		byName[f.name] = f
	}
	root := filepath.Join("..", "golden", "testdata")
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, ok := byName[d.Name()]
		if !ok {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		doc, err := decode(f, raw)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		counts[f.name]++
		for _, bad := range tr[f.name].check("", doc) {
			t.Errorf("%s: key %s is not in ToolHive %s's %s.%s", p, bad, version, f.pkg, f.typ)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range toolhiveFor {
		if counts[f.name] == 0 {
			t.Errorf("no %s recorded under %s", f.name, root)
		}
	}
	t.Logf("checked %v against ToolHive %s", counts, version)
}

// Every key hivekeeper's own types of these files can write, every field
// set, is a key of ToolHive's type at the API release: a field added to
// pkg/toolhive/schema under a name ToolHive does not read fails here
// before any manifest uses it.
func TestSchemaTypesUseOnlyToolHiveKeys(t *testing.T) {
	version, tr := releaseTrees(t, framework.ToolHiveAPIRelease)
	rc := &schema.RunConfig{}
	fill(reflect.ValueOf(rc).Elem())
	js, err := schema.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	as := &schema.EmbeddedAuthServerConfig{}
	fill(reflect.ValueOf(as).Elem())
	ys, err := schema.MarshalAuthServerConfig(as)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f   file
		raw string
	}{{runConfig, js}, {authServer, ys}} {
		doc, err := decode(c.f, []byte(c.raw))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range tr[c.f.name].check("", doc) {
			t.Errorf("hivekeeper's %s can write key %s, which is not in ToolHive %s's %s.%s", c.f.name, bad, version, c.f.pkg, c.f.typ)
		}
	}
}

// fill sets every field of v, down every pointer, slice and map, to a
// value that is not zero, so that encoding it writes every key.
func fill(v reflect.Value) {
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.SetBytes([]byte(`{}`))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e)
		k := reflect.New(v.Type().Key()).Elem()
		fill(k)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	}
}

// The suites' release (v0.66.0) removed and renamed no key of the API
// release (v0.63.0) in any of the three files: every key path of the
// older release's types is one of the newer's, so a file written for one
// release is read by the other.
func TestNewerReleaseKeepsEveryOlderReleaseKey(t *testing.T) {
	oldVersion, older := releaseTrees(t, framework.ToolHiveAPIRelease)
	newVersion, newer := releaseTrees(t, framework.ToolHiveRuntimeRelease)
	for _, f := range toolhiveFor {
		have := map[string]bool{}
		for _, k := range newer[f.name].keys() {
			have[k] = true
		}
		old := older[f.name].keys()
		for _, k := range old {
			if !have[k] {
				t.Errorf("%s: key %s of ToolHive %s is not in %s", f.name, k, oldVersion, newVersion)
			}
		}
		t.Logf("%s: %d key paths in %s, %d in %s", f.name, len(old), oldVersion, len(have), newVersion)
	}
}

// The trees are ToolHive's: a few keys every reader knows are where they
// should be, a key that is not there is refused by name, and an open
// subtree (the authorization backend's keys) accepts anything.
func TestKeyTreeShape(t *testing.T) {
	_, tr := releaseTrees(t, framework.ToolHiveAPIRelease)
	rc := tr[runConfig.name]
	for _, c := range []struct {
		doc  string
		want string
	}{
		{`{"schema_version":"v0.1.0","proxy_read_timeout":"30s","scaling_config":{"session_redis":{"tls":{"caCertFile":"/x"}}}}`, ""},
		{`{"oidc_config":{"Issuer":"i","Audience":"a"},"embedded_auth_server_config":{"tls_listener":{"cert_file":"c"},"registration_rate_limit":{"burst":1}}}`, ""},
		{`{"authz_config":{"version":"1.0","type":"cedarv1","cedar":{"policies":[]}}}`, ""},
		{`{"permission_profile":{"network":{"outbound":{"insecure_allow_all":true}}}}`, ""},
		{`{"env_vars":{"ANY":"x"},"scaling_config":{"session_redis":{"tls":{"ca_cert_file":"/x"}}}}`, "scaling_config.session_redis.tls.ca_cert_file"},
		{`{"proxyReadTimeout":"30s"}`, "proxyReadTimeout"},
	} {
		var doc any
		if err := json.Unmarshal([]byte(c.doc), &doc); err != nil {
			t.Fatal(err)
		}
		bad := rc.check("", doc)
		if got := strings.Join(bad, ", "); c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want+" ") {
			t.Errorf("%s: refused %q, want %q", c.doc, got, c.want)
		}
	}
	var doc any
	if err := yaml.Unmarshal([]byte("sessionStorage:\n  tls: {}\noperational:\n  timeouts:\n    backendInit: 1m0s\n"), &doc); err != nil {
		t.Fatal(err)
	}
	if bad := tr[vmcpConfig.name].check("", doc); len(bad) != 0 {
		t.Errorf("config.yaml keys refused: %v", bad)
	}
}
