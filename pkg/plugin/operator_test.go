package plugin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The operator is found by its environment whatever its image's
// registry, its Helm release, Argo CD Application and Flux objects are read
// from their marks, and its environment is resolved as the kubelet would:
// envFrom first, env after and winning, ConfigMaps read, Secrets not.
func TestFindOperator(t *testing.T) {
	d := operatorDeployment()
	d.Spec.Template.Spec.Containers[0].Image = "mirror.example.com/toolhive-operator@sha256:abc"
	d.Labels[labelVersion] = "v0.62.1"
	d.Labels[labelFluxHelmName], d.Labels[labelFluxHelmNamespace] = "toolhive", "flux-system"
	c := &d.Spec.Template.Spec.Containers[0]
	c.EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "operator-env"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "operator-secrets"}}, Prefix: "X_"},
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "TOOLHIVE_DEFAULT_REDIS_SECRET_NAME", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "name"}}})
	env := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "toolhive-system", Name: "operator-env"},
		Data: map[string]string{"TOOLHIVE_PROXY_HOST": "127.0.0.1", "WATCH_NAMESPACE": "team-a"}}
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}}}}}

	op, err := findOperator(context.Background(), k8sfake.NewClientset(d, other, env, operatorImages()), "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := &Operator{Namespace: "toolhive-system", Name: "toolhive-operator", Container: "manager", Image: "mirror.example.com/toolhive-operator@sha256:abc",
		Release: "v0.62.1", Replicas: 1,
		Owners: []Owner{
			{Kind: "Helm release", Name: "toolhive-operator", Namespace: "toolhive-system", Chart: "operator-0.63.0", Via: annotationHelmRelease},
			{Kind: "Argo CD Application", Name: "toolhive", Via: annotationArgoTracking},
			{Kind: "Flux HelmRelease", Name: "toolhive", Namespace: "flux-system", Via: labelFluxHelmName},
		},
		Env: []EnvVar{
			{Name: "WATCH_NAMESPACE", Value: "team-a", From: "ConfigMap operator-env"},
			{Name: "X_*", From: "Secret operator-secrets", Unread: true},
			{Name: "GOMEMLIMIT", Value: "150MiB"},
			{Name: "UNSTRUCTURED_LOGS", Value: "false"},
			{Name: "POD_NAMESPACE", Value: "toolhive-system", From: "the pod's namespace"},
			{Name: "TOOLHIVE_RUNNER_IMAGE", Value: testRunner},
			{Name: "VMCP_IMAGE", Value: testVMCP, From: "ConfigMap operator-images key vmcp"},
			{Name: "TOOLHIVE_PROXY_HOST", Value: "0.0.0.0"},
			{Name: "TOOLHIVE_USAGE_METRICS_ENABLED", Value: "false"},
			{Name: "TOOLHIVE_DEFAULT_REDIS_SECRET_NAME", From: "Secret redis key name", Unread: true},
		}}
	if !reflect.DeepEqual(op, want) {
		t.Errorf("operator\n got %s\nwant %s", toJSON(op), toJSON(want))
	}

	s, err := settingsOf(op, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(s.Flags, " "), "--log-format=json --namespaces=team-a --proxy-host=0.0.0.0 --runner-image="+testRunner+
		" --toolhive-instance-id-namespace=toolhive-system --toolhive-release=v0.63.0 --toolhive-skip-update-check=false --toolhive-usage-metrics=false --vmcp-image="+testVMCP; got != want {
		t.Errorf("flags\n got %s\nwant %s", got, want)
	}
	if want := []string{"X_* (Secret operator-secrets)", "TOOLHIVE_DEFAULT_REDIS_SECRET_NAME (Secret redis key name)"}; !slices.Equal(s.Unread, want) {
		t.Errorf("unread %q, want %q", s.Unread, want)
	}
	opts, err := options(s.Flags)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opts.Namespaces, []string{"team-a"}) || opts.RunnerImage != testRunner || opts.VMCPImage != testVMCP || opts.UsageMetrics.Middleware() ||
		opts.ProxyHost != "0.0.0.0" || opts.RegistryAPIImage != app.DefaultRegistryAPIImage || opts.DefaultRedis != nil {
		t.Errorf("options %+v", opts)
	}
}

func TestFindOperatorChoice(t *testing.T) {
	ctx := context.Background()
	second := operatorDeployment()
	second.Namespace = "toolhive-canary"
	canaryImages := operatorImages()
	canaryImages.Namespace = "toolhive-canary"
	kube := k8sfake.NewClientset(operatorDeployment(), second, operatorImages(), canaryImages)
	var ec *exitCode
	if _, err := findOperator(ctx, kube, "", ""); !errors.As(err, &ec) || ec.code != exitUsage || !strings.Contains(err.Error(), "toolhive-canary/toolhive-operator") {
		t.Errorf("two operators: %v", err)
	}
	if op, err := findOperator(ctx, kube, "toolhive-system", ""); err != nil || op == nil || op.Namespace != "toolhive-system" {
		t.Errorf("-n toolhive-system: %+v, %v", op, err)
	}
	if op, err := findOperator(ctx, kube, "toolhive-canary", "toolhive-operator"); err != nil || op.Namespace != "toolhive-canary" {
		t.Errorf("--operator: %+v, %v", op, err)
	}
	if _, err := findOperator(ctx, kube, "", "toolhive-operator"); !errors.As(err, &ec) || ec.code != exitUsage {
		t.Errorf("--operator without -n: %v", err)
	}
	if op, err := findOperator(ctx, k8sfake.NewClientset(), "", ""); op != nil || err != nil {
		t.Errorf("no operator: %+v, %v", op, err)
	}
}

// A variable hivekeeper does not know, or one with a flag it could not
// read, blocks: the switch could not keep its meaning.
func TestSettingsBlockers(t *testing.T) {
	op := &Operator{Env: []EnvVar{{Name: "TOOLHIVE_RUNNER_IMAGE", Value: "r:1"}, {Name: "TOOLHIVE_NEW_SETTING", Value: "x"},
		{Name: "VMCP_IMAGE", From: "Secret images key vmcp", Unread: true}, {Name: "GOGC", From: "Secret x key y", Unread: true}}}
	s, err := settingsOf(op, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Unknown, []string{"TOOLHIVE_NEW_SETTING"}) || !slices.Equal(s.Unread, []string{"VMCP_IMAGE (Secret images key vmcp)"}) {
		t.Errorf("unknown %q, unread %q", s.Unknown, s.Unread)
	}
	r := &Report{Settings: s, Prediction: Prediction{Settled: true}}
	r.conclude()
	if r.ExitCode != exitBlocked || len(r.Blockers) != 2 {
		t.Errorf("exit %d, blockers %q", r.ExitCode, r.Blockers)
	}
}

// A CRD that may hold objects in a version hivekeeper does not serve
// blocks; a kind hivekeeper does not know, and a CRD its Helm release
// would delete on uninstall, are noted; the CRDs of other groups are not
// looked at.
func TestCheckCRDs(t *testing.T) {
	other := crd("widgets", "Widget", "v9")
	other.Spec.Group = "example.com"
	kept := crd("mcpservers", "MCPServer", "v1alpha1", "v1beta1")
	kept.Annotations = map[string]string{annotationHelmRelease: "toolhive-operator-crds", annotationHelmNamespace: "toolhive-system", annotationResourcePolicy: "keep"}
	notKept := crd("mcptoolconfigs", "MCPToolConfig", "v1beta1")
	notKept.Annotations = map[string]string{annotationHelmRelease: "toolhive-operator-crds", annotationHelmNamespace: "toolhive-system"}
	got, err := checkCRDs(context.Background(), apiextensionsfake.NewSimpleClientset(
		kept, notKept, crd("mcpgroups", "MCPGroup", "v1alpha2"), crd("mcpfoos", "MCPFoo", "v1"), other))
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]CRD{}
	for _, c := range got {
		byKind[c.Kind] = c
	}
	if c := byKind["MCPServer"]; c.Problem != "" || c.Note != "" {
		t.Errorf("MCPServer %+v", c)
	}
	if c := byKind["MCPToolConfig"]; c.Problem != "" || !strings.HasPrefix(c.Note, "Helm release toolhive-system/toolhive-operator-crds would delete this CRD on uninstall") {
		t.Errorf("MCPToolConfig %+v", c)
	}
	if c := byKind["MCPGroup"]; !strings.HasPrefix(c.Problem, "objects may be stored as v1alpha2") {
		t.Errorf("MCPGroup %+v", c)
	}
	if c := byKind["MCPFoo"]; c.Problem != "" || !strings.Contains(c.Note, "does not know") {
		t.Errorf("MCPFoo %+v", c)
	}
	if c := byKind["VirtualMCPServer"]; c.Name != "" || !strings.Contains(c.Note, "no CRD") {
		t.Errorf("VirtualMCPServer %+v", c)
	}
	if _, ok := byKind["Widget"]; ok || len(got) != len(knownKinds())+1 {
		t.Errorf("%d rows: %s", len(got), toJSON(got))
	}
}

// servedVersions and knownKinds are what config/crd holds: every kind
// hivekeeper's CRDs define, each served in exactly those versions.
func TestServedVersionsAreTheCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	var kinds []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, c.Spec.Names.Kind)
		var served []string
		for _, v := range c.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
		slices.Sort(served)
		if !slices.Equal(served, servedVersions) {
			t.Errorf("%s serves %v, preflight assumes %v", c.Name, served, servedVersions)
		}
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, knownKinds()) {
		t.Errorf("config/crd has %v, the API types %v", kinds, knownKinds())
	}
}

// Every informer the controllers start lists what the snapshot lists,
// under the same label selector: a controller that comes to read a new
// kind, or the same kind under another selector, fails here until the
// snapshot lists it too (or it would see a cluster without those objects).
func TestSnapshotListsWhatTheInformersList(t *testing.T) {
	set, err := app.Build(k8sfake.NewClientset(), thfake.NewSimpleClientset(), app.Options{}, record.NewFakeRecorder(1))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	resources := map[reflect.Type]string{
		reflect.TypeOf(&appsv1.Deployment{}): "deployments", reflect.TypeOf(&appsv1.StatefulSet{}): "statefulsets",
		reflect.TypeOf(&corev1.Service{}): "services", reflect.TypeOf(&corev1.Pod{}): "pods", reflect.TypeOf(&corev1.ConfigMap{}): "configmaps",
		reflect.TypeOf(&corev1.ServiceAccount{}): "serviceaccounts", reflect.TypeOf(&rbacv1.RoleBinding{}): "rolebindings",
	}
	check := func(selector string, started map[reflect.Type]bool) {
		for typ := range started {
			res, ok := resources[typ]
			if !ok {
				t.Errorf("the controllers watch %v (selector %q), which preflight does not know", typ, selector)
				continue
			}
			if !slices.ContainsFunc(kubeLists, func(l kubeList) bool { return l.resource == res && l.selector == selector }) {
				t.Errorf("the controllers watch %s under %q, which the snapshot does not list", res, selector)
			}
		}
	}
	for _, s := range set.Deps.Scopes {
		for sel, f := range map[string]interface {
			Start(<-chan struct{})
			WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool
		}{app.ChildLabelSelector: s.Kube, "": s.KubeAll} {
			f.Start(stop)
			check(sel, f.WaitForCacheSync(stop))
		}
		for sel, f := range s.Selected {
			f.Start(stop)
			check(sel, f.WaitForCacheSync(stop))
		}
		s.Toolhive.Start(stop)
		started := s.Toolhive.WaitForCacheSync(stop)
		if len(started) != len(toolhiveLists) {
			t.Errorf("the controllers watch %d ToolHive kinds, the snapshot lists %d", len(started), len(toolhiveLists))
		}
	}
}

// Usage errors exit 2 before anything is read; version --client prints
// the version.
func TestExecute(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"version", "--client"}, exitOK, "v1.2.3\n"},
		{[]string{"version", "extra"}, exitUsage, ""},
		{[]string{"preflight", "-o", "xml"}, exitUsage, ""},
		{[]string{"preflight", "extra"}, exitUsage, ""},
		{[]string{"preflight", "--no-such-flag"}, exitUsage, ""},
	} {
		var out, errOut bytes.Buffer
		if code := Execute(context.Background(), "v1.2.3", c.args, nil, &out, &errOut); code != c.code || out.String() != c.out {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, code, out.String(), errOut.String())
		}
	}
}

// A production install's settings reach the options the controllers run
// with as the binary's flags would set them: the default Redis with its
// password key defaulted and TLS verified by the CA Secret, the pull
// secrets and namespaces as lists; an incomplete CA reference is refused
// as the binary refuses it.
func TestOptions(t *testing.T) {
	o, err := options([]string{"--namespaces=a,b", "--default-image-pull-secrets=regcred", "--default-redis-addr=redis:6379",
		"--default-redis-secret-name=rs", "--default-redis-tls-enabled", "--default-redis-tls-ca-secret-name=ca",
		"--default-redis-tls-ca-secret-key=ca.crt", "--toolhive-usage-metrics=true", "--toolhive-skip-update-check=true",
		"--toolhive-release=v0.63.0", "--toolhive-instance-id-namespace=toolhive", "--log-format=json"})
	if err != nil {
		t.Fatal(err)
	}
	r := o.DefaultRedis
	if !slices.Equal(o.Namespaces, []string{"a", "b"}) || !slices.Equal(o.PullSecrets, []string{"regcred"}) ||
		o.UsageMetrics != (wiring.UsageMetrics{SkipUpdateCheck: true}) || o.Release.Version != "v0.63.0" ||
		r == nil || r.Addr != "redis:6379" || r.SecretName != "rs" || r.SecretKey != "redis-password" ||
		r.TLS == nil || r.TLS.CACertSecretRef == nil || r.TLS.CACertSecretRef.Name != "ca" || r.TLS.CACertSecretRef.Key != "ca.crt" {
		t.Errorf("options %+v, redis %+v", o, r)
	}
	if _, err := options([]string{"--default-redis-addr=redis:6379", "--default-redis-tls-enabled", "--default-redis-tls-ca-secret-name=ca"}); err == nil {
		t.Error("a CA Secret without its key must be refused")
	}
}

// A chart Argo CD rendered carries Helm's labels but not the annotations
// of a Helm release, and names its Application with Argo CD's default
// tracking label; an Application in another namespace is "ns_name".
func TestOwners(t *testing.T) {
	for _, c := range []struct {
		labels, annotations map[string]string
		want                []Owner
	}{
		{map[string]string{labelManagedBy: "Helm", labelInstance: "toolhive", labelHelmChart: "operator-0.63.0"}, nil,
			[]Owner{{Kind: "Argo CD Application", Name: "toolhive", Via: labelInstance}}},
		{map[string]string{labelArgoInstance: "platform_toolhive"}, nil,
			[]Owner{{Kind: "Argo CD Application", Name: "toolhive", Namespace: "platform", Via: labelArgoInstance}}},
		{map[string]string{labelManagedBy: "Helm", labelInstance: "toolhive-operator"},
			map[string]string{annotationHelmRelease: "toolhive-operator"},
			[]Owner{{Kind: "Helm release", Name: "toolhive-operator", Namespace: "toolhive-system", Via: annotationHelmRelease}}},
		{map[string]string{labelFluxKustomizeName: "infra", labelFluxKustomizeNS: "flux-system", labelInstance: "toolhive"}, nil,
			[]Owner{{Kind: "Flux Kustomization", Name: "infra", Namespace: "flux-system", Via: labelFluxKustomizeName}}},
		{nil, nil, nil},
	} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "toolhive-system", Labels: c.labels, Annotations: c.annotations}}
		if got := owners(d); !reflect.DeepEqual(got, c.want) {
			t.Errorf("labels %v, annotations %v:\n got %s\nwant %s", c.labels, c.annotations, toJSON(got), toJSON(c.want))
		}
	}
}

// The process's own variables (proxies, Go's runtime, the time zone) are
// carried over in extraEnv, or noted when their value was not read; an
// unknown variable --accept-env names is left behind with a note; any
// other unknown one blocks, saying how to accept it.
func TestSettingsCarryProcessVariables(t *testing.T) {
	op := &Operator{Env: []EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "no_proxy", Value: ".svc,10.0.0.0/8"},
		{Name: "GOMAXPROCS", Value: "2"}, {Name: "TZ", From: "Secret tz key zone", Unread: true},
		{Name: "TOOLHIVE_NEW_SETTING", Value: "x"}, {Name: "VENDOR_AGENT", Value: "on"}}}
	s, err := settingsOf(op, []string{"TOOLHIVE_NEW_SETTING"})
	if err != nil {
		t.Fatal(err)
	}
	var carried []string
	for _, c := range s.Carried {
		carried = append(carried, c.Name)
	}
	if !slices.Equal(carried, []string{"HTTPS_PROXY", "no_proxy", "GOMAXPROCS"}) {
		t.Errorf("carried %q", carried)
	}
	wantEnv := []any{map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}, map[string]any{"name": "no_proxy", "value": ".svc,10.0.0.0/8"},
		map[string]any{"name": "GOMAXPROCS", "value": "2"}}
	if !reflect.DeepEqual(s.Values["extraEnv"], wantEnv) {
		t.Errorf("extraEnv %s", toJSON(s.Values["extraEnv"]))
	}
	if len(s.NotCarried) != 1 || s.NotCarried[0].Name != "TZ" || !strings.Contains(s.NotCarried[0].Why, "Secret tz key zone") {
		t.Errorf("not carried %+v", s.NotCarried)
	}
	if !slices.Equal(s.Accepted, []string{"TOOLHIVE_NEW_SETTING"}) || !slices.Equal(s.Unknown, []string{"VENDOR_AGENT"}) || len(s.Unread) != 0 {
		t.Errorf("accepted %q, unknown %q, unread %q", s.Accepted, s.Unknown, s.Unread)
	}
	r := &Report{Settings: s, Prediction: Prediction{Settled: true}}
	r.conclude()
	if r.ExitCode != exitBlocked || len(r.Blockers) != 1 || !strings.HasSuffix(r.Blockers[0], "pass --accept-env VENDOR_AGENT") {
		t.Errorf("exit %d, blockers %q", r.ExitCode, r.Blockers)
	}
	var out bytes.Buffer
	if err := r.write(&out, "text"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"  carried over as it is (extraEnv): HTTPS_PROXY: ", "  left behind (--accept-env): TOOLHIVE_NEW_SETTING, ", "- name: GOMAXPROCS\n    value: \"2\"\n"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("text output without %q:\n%s", line, out.String())
		}
	}
}
