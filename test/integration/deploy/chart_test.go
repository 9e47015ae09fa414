package deploy_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hivekeeper/hivekeeper/pkg/rbac"
)

// These tests need helm but no API server.

func decode[T any](t *testing.T, obj *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
		t.Fatalf("decoding %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return out
}

func sameRules(t *testing.T, what string, got, want []rbacv1.PolicyRule) {
	t.Helper()
	g, w := rbac.Expand(got), rbac.Expand(want)
	if !slices.Equal(g, w) {
		var extra, missing []string
		for _, r := range g {
			if !slices.Contains(w, r) {
				extra = append(extra, fmt.Sprintf("%+v", r))
			}
		}
		for _, r := range w {
			if !slices.Contains(g, r) {
				missing = append(missing, fmt.Sprintf("%+v", r))
			}
		}
		t.Errorf("%s differs from pkg/rbac:\n  granted but not declared: %s\n  declared but not granted: %s",
			what, strings.Join(extra, " "), strings.Join(missing, " "))
	}
}

// named returns the rendered object of a kind and name, failing when it is
// missing.
func named(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range find(objs, kind) {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// chartRunners are the runner ClusterRoles of a release named "hivekeeper".
var chartRunners = rbac.DefaultRunners()

// The chart grants exactly what pkg/rbac declares: cluster-wide by default.
func TestChartClusterRoleIsTheDeclaredRules(t *testing.T) {
	objs := render(t, "hivekeeper", "hivekeeper-system")
	cr := named(t, objs, "ClusterRole", "hivekeeper")
	sameRules(t, "ClusterRole", decode[rbacv1.ClusterRole](t, cr).Rules, rbac.WorkloadRules(chartRunners))

	crb := decode[rbacv1.ClusterRoleBinding](t, named(t, objs, "ClusterRoleBinding", "hivekeeper"))
	wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: "hivekeeper", Namespace: "hivekeeper-system"}
	if crb.RoleRef.Name != cr.GetName() || len(crb.Subjects) != 1 || crb.Subjects[0] != wantSubject {
		t.Errorf("ClusterRoleBinding binds %+v to %+v, want %s to %+v", crb.RoleRef, crb.Subjects, cr.GetName(), wantSubject)
	}

	roles := find(objs, "Role")
	if len(roles) != 1 || roles[0].GetNamespace() != "hivekeeper-system" {
		t.Fatalf("want only the leader-election Role in hivekeeper-system, got %d Roles", len(roles))
	}
	sameRules(t, "leader-election Role", decode[rbacv1.Role](t, roles[0]).Rules, rbac.LeaderElectionRules("hivekeeper-leader"))
}

// The runner ClusterRoles are pkg/rbac's, under the names the Deployment
// passes to the controller and the controller may bind; they are rendered
// in both watch modes, and never bound cluster-wide.
func TestChartRunnerClusterRoles(t *testing.T) {
	for mode, args := range map[string][]string{
		"all-namespaces": {"--set", "fullnameOverride=hk"},
		"namespace-list": {"--set", "fullnameOverride=hk", "--set", "watchNamespaces={team-a}"},
	} {
		t.Run(mode, func(t *testing.T) {
			objs := render(t, "hivekeeper", "hivekeeper-system", args...)
			runners := rbac.Runners{ProxyRunner: "hk-proxy-runner", StdioProxyRunner: "hk-stdio-proxy-runner", RemoteProxyRunner: "hk-remote-proxy-runner",
				RegistryAPI: "hk-registry-api", VMCPDiscovered: "hk-vmcp-discovered", VMCPInline: "hk-vmcp-inline"}
			want := map[string][]rbacv1.PolicyRule{}
			for _, cr := range runners.ClusterRoles() {
				want[cr.Name] = cr.Rules
			}
			for name, rules := range want {
				sameRules(t, "ClusterRole "+name, decode[rbacv1.ClusterRole](t, named(t, objs, "ClusterRole", name)).Rules, rules)
			}
			for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
				for _, o := range find(objs, kind) {
					if b := decode[rbacv1.RoleBinding](t, o); want[b.RoleRef.Name] != nil {
						t.Errorf("the chart binds runner ClusterRole %s itself (%s %s)", b.RoleRef.Name, kind, o.GetName())
					}
				}
			}
			args := decode[appsv1.Deployment](t, find(objs, "Deployment")[0]).Spec.Template.Spec.Containers[0].Args
			for _, a := range []string{"--proxy-runner-cluster-role=hk-proxy-runner", "--stdio-proxy-runner-cluster-role=hk-stdio-proxy-runner",
				"--remote-proxy-runner-cluster-role=hk-remote-proxy-runner", "--registry-api-cluster-role=hk-registry-api",
				"--vmcp-discovered-cluster-role=hk-vmcp-discovered", "--vmcp-inline-cluster-role=hk-vmcp-inline"} {
				if !slices.Contains(args, a) {
					t.Errorf("args %q lack %q", args, a)
				}
			}
		})
	}
}

// With a namespace list the same rules are granted by a Role in each, and
// nothing cluster-wide.
func TestChartNamespacedRolesAreTheDeclaredRules(t *testing.T) {
	objs := render(t, "hivekeeper", "hivekeeper-system",
		"--set", "watchNamespaces={team-a,team-b}", "--set", "leaderElection.leaseName=custom-lease")
	for _, o := range append(find(objs, "ClusterRole"), find(objs, "ClusterRoleBinding")...) {
		// The runner ClusterRoles are only ever bound per namespace, the
		// metrics reader is for scrapers, and the secure metrics endpoint
		// needs the cluster-scoped token and access reviews.
		switch o.GetName() {
		case chartRunners.ProxyRunner, chartRunners.StdioProxyRunner, chartRunners.RemoteProxyRunner, chartRunners.RegistryAPI,
			chartRunners.VMCPDiscovered, chartRunners.VMCPInline, "hivekeeper-metrics-reader", "hivekeeper-metrics-auth":
		default:
			t.Errorf("namespaced install renders cluster-scoped %s %s", o.GetKind(), o.GetName())
		}
	}
	byNS := map[string]*rbacv1.Role{}
	for _, o := range find(objs, "Role") {
		r := decode[rbacv1.Role](t, o)
		byNS[r.Namespace] = r
	}
	for _, ns := range []string{"team-a", "team-b"} {
		r, ok := byNS[ns]
		if !ok {
			t.Errorf("no Role in %s", ns)
			continue
		}
		sameRules(t, "Role in "+ns, r.Rules, rbac.WorkloadRules(chartRunners))
	}
	if r, ok := byNS["hivekeeper-system"]; !ok {
		t.Error("no leader-election Role")
	} else {
		sameRules(t, "leader-election Role", r.Rules, rbac.LeaderElectionRules("custom-lease"))
	}
	bindings := map[string]bool{}
	for _, o := range find(objs, "RoleBinding") {
		b := decode[rbacv1.RoleBinding](t, o)
		if len(b.Subjects) != 1 || b.Subjects[0].Name != "hivekeeper" || b.Subjects[0].Namespace != "hivekeeper-system" {
			t.Errorf("RoleBinding %s/%s binds %+v", b.Namespace, b.Name, b.Subjects)
		}
		bindings[b.Namespace] = true
	}
	if len(bindings) != 3 {
		t.Errorf("want RoleBindings in team-a, team-b and hivekeeper-system, got %v", bindings)
	}

	dep := decode[appsv1.Deployment](t, find(objs, "Deployment")[0])
	args := dep.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--namespaces=team-a,team-b", "--leader-elect-id=custom-lease"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
}

// The Deployment is what issue 7 asks for: HA with leader election, the
// pod's namespace for the Lease, restricted security, probes on the health
// port.
func TestChartDeployment(t *testing.T) {
	objs := render(t, "hivekeeper", "hivekeeper-system")
	deps := find(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("want 1 Deployment, got %d", len(deps))
	}
	dep := decode[appsv1.Deployment](t, deps[0])
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != "hivekeeper" {
		t.Errorf("serviceAccountName = %q", pod.ServiceAccountName)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	for _, want := range []string{"--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--workers=16",
		"--kube-api-qps=-1", "--kube-api-burst=1000", "--log-format=text", "-v=2",
		"--toolhive-release=v0.66.0", "--toolhive-usage-metrics=true", "--toolhive-skip-update-check=false",
		"--runner-image=ghcr.io/stacklok/toolhive/proxyrunner:v0.66.0", "--vmcp-image=ghcr.io/stacklok/toolhive/vmcp:v0.66.0"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %q", c.Args, want)
		}
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--namespaces") }) {
		t.Errorf("default install must watch all namespaces, args %q", c.Args)
	}
	var podNS *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "POD_NAMESPACE" {
			podNS = &c.Env[i]
		}
	}
	if podNS == nil || podNS.ValueFrom == nil || podNS.ValueFrom.FieldRef == nil || podNS.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE must come from the downward API, got %+v", podNS)
	}

	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext is not restricted: %+v", sc)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod securityContext must set runAsNonRoot: %+v", psc)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %s: %+v", name, p)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources must request CPU and limit memory: %+v", c.Resources)
	}

	pdbs := find(objs, "PodDisruptionBudget")
	if len(pdbs) != 1 {
		t.Fatalf("want a PodDisruptionBudget, got %d", len(pdbs))
	}
	if v, _, _ := unstructured.NestedFieldNoCopy(pdbs[0].Object, "spec", "minAvailable"); fmt.Sprint(v) != "1" {
		t.Errorf("PDB minAvailable = %v, want 1", v)
	}
	if n := len(find(objs, "ServiceMonitor")); n != 0 {
		t.Errorf("ServiceMonitor must be off by default, got %d", n)
	}
	svcs := find(objs, "Service")
	if len(svcs) != 1 {
		t.Fatalf("want the metrics Service, got %d", len(svcs))
	}
	svc := decode[corev1.Service](t, svcs[0])
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics Service ports: %+v", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("metrics Service selector %s=%s does not select the pods %v", k, v, dep.Spec.Template.Labels)
		}
	}
}

// Secure metrics are on by default: the flag, the ClusterRoleBinding to
// system:auth-delegator for the reviews, a reader ClusterRole for scrapers,
// and a ServiceMonitor that scrapes over HTTPS with a bearer token from a
// Secret (a scraper ServiceAccount bound to the reader role) and verifies
// the serving certificate the chart makes, which the pods serve, against
// its CA for the Service's name. Off, metrics are plain HTTP and no
// metrics RBAC is rendered.
func TestChartSecureMetrics(t *testing.T) {
	objs := render(t, "hivekeeper", "hivekeeper-system", "--set", "serviceMonitor.enabled=true")
	args := decode[appsv1.Deployment](t, find(objs, "Deployment")[0]).Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--metrics-secure") {
		t.Errorf("args %q lack --metrics-secure", args)
	}
	crb := decode[rbacv1.ClusterRoleBinding](t, named(t, objs, "ClusterRoleBinding", "hivekeeper-metrics-auth"))
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != "system:auth-delegator" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "hivekeeper" {
		t.Errorf("metrics auth binding %+v to %+v", crb.RoleRef, crb.Subjects)
	}
	reader := decode[rbacv1.ClusterRole](t, named(t, objs, "ClusterRole", "hivekeeper-metrics-reader"))
	if !equality.Semantic.DeepEqual(reader.Rules, rbac.MetricsReaderRules()) {
		t.Errorf("metrics reader rules %+v, want %+v", reader.Rules, rbac.MetricsReaderRules())
	}
	endpoint := func(objs []*unstructured.Unstructured) map[string]any {
		eps, _, _ := unstructured.NestedSlice(find(objs, "ServiceMonitor")[0].Object, "spec", "endpoints")
		return eps[0].(map[string]any)
	}
	ep := endpoint(objs)
	if ep["scheme"] != "https" || ep["bearerTokenFile"] != nil {
		t.Errorf("ServiceMonitor endpoint %v", ep)
	}
	if cred, _, _ := unstructured.NestedStringMap(ep, "authorization", "credentials"); cred["name"] != "hivekeeper-metrics-scraper" || cred["key"] != "token" {
		t.Errorf("ServiceMonitor authorization %v", ep["authorization"])
	}
	tlsCfg, _, _ := unstructured.NestedMap(ep, "tlsConfig")
	caRef, _, _ := unstructured.NestedStringMap(tlsCfg, "ca", "secret")
	serverName, _, _ := unstructured.NestedString(tlsCfg, "serverName")
	if caRef["name"] != "hivekeeper-metrics-tls" || caRef["key"] != "ca.crt" || serverName != "hivekeeper-metrics.hivekeeper-system.svc" || tlsCfg["insecureSkipVerify"] != nil {
		t.Errorf("ServiceMonitor tlsConfig %v", tlsCfg)
	}
	secret := decode[corev1.Secret](t, named(t, objs, "Secret", "hivekeeper-metrics-tls"))
	verifyServing(t, secret, serverName)
	pod := decode[appsv1.Deployment](t, find(objs, "Deployment")[0]).Spec.Template.Spec
	if !slices.Contains(args, "--metrics-cert-path=/etc/hivekeeper/metrics-certs") || len(pod.Volumes) == 0 ||
		!slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "hivekeeper-metrics-tls" }) {
		t.Errorf("the pods do not serve hivekeeper-metrics-tls: args %q, volumes %+v", args, pod.Volumes)
	}
	scraper := decode[rbacv1.ClusterRoleBinding](t, named(t, objs, "ClusterRoleBinding", "hivekeeper-metrics-scraper"))
	if scraper.RoleRef.Name != "hivekeeper-metrics-reader" || len(scraper.Subjects) != 1 || scraper.Subjects[0].Name != "hivekeeper-metrics-scraper" || scraper.Subjects[0].Namespace != "hivekeeper-system" {
		t.Errorf("scraper binding %+v to %+v", scraper.RoleRef, scraper.Subjects)
	}
	token := decode[corev1.Secret](t, named(t, objs, "Secret", "hivekeeper-metrics-scraper"))
	if token.Type != corev1.SecretTypeServiceAccountToken || token.Annotations[corev1.ServiceAccountNameKey] != "hivekeeper-metrics-scraper" {
		t.Errorf("scraper token Secret %s %v", token.Type, token.Annotations)
	}

	// With cert-manager, a Certificate for the Service's name writes the
	// Secret the pods serve and the ServiceMonitor verifies; the chart
	// makes none.
	cm := render(t, "hivekeeper", "hivekeeper-system", "--set", "serviceMonitor.enabled=true",
		"--set", "metrics.certManager.enabled=true", "--set", "metrics.certManager.issuerRef.name=metrics-ca", "--set", "metrics.certManager.issuerRef.kind=ClusterIssuer")
	cert := named(t, cm, "Certificate", "hivekeeper-metrics")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	issuer, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
	if secretName != "hivekeeper-metrics-tls" || !slices.Contains(dnsNames, serverName) || issuer["name"] != "metrics-ca" || issuer["kind"] != "ClusterIssuer" {
		t.Errorf("Certificate: secret %q, dnsNames %v, issuer %v", secretName, dnsNames, issuer)
	}
	for _, o := range find(cm, "Secret") {
		if o.GetName() == "hivekeeper-metrics-tls" {
			t.Error("with cert-manager the chart still makes the metrics Secret")
		}
	}

	plain := render(t, "hivekeeper", "hivekeeper-system", "--set", "serviceMonitor.enabled=true", "--set", "metrics.secure=false")
	if args := decode[appsv1.Deployment](t, find(plain, "Deployment")[0]).Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--metrics-secure") {
		t.Errorf("metrics.secure=false still passes --metrics-secure")
	}
	for _, o := range append(find(plain, "ClusterRole"), find(plain, "ClusterRoleBinding")...) {
		if strings.Contains(o.GetName(), "metrics") {
			t.Errorf("metrics.secure=false renders %s %s", o.GetKind(), o.GetName())
		}
	}
	if ep := endpoint(plain); ep["scheme"] != "http" || ep["authorization"] != nil || ep["tlsConfig"] != nil {
		t.Errorf("plain ServiceMonitor endpoint %v", ep)
	}
}

// verifyServing checks that the Secret's tls.crt is valid for serverName
// under its ca.crt, and that tls.key is its key.
func verifyServing(t *testing.T, s *corev1.Secret, serverName string) {
	t.Helper()
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret %s is %s", s.Name, s.Type)
	}
	if _, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
		t.Errorf("Secret %s: %v", s.Name, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("Secret %s has no CA", s.Name)
	}
	block, _ := pem.Decode(s.Data["tls.crt"])
	if block == nil {
		t.Fatalf("Secret %s has no certificate", s.Name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: serverName, Roots: roots}); err != nil {
		t.Errorf("the serving certificate does not verify for %s: %v", serverName, err)
	}
}

// The admission policy is on by default, can be turned off, and in a
// namespace-list install binds only the watched namespaces.
func TestChartAdmissionPolicy(t *testing.T) {
	objs := render(t, "hivekeeper", "hivekeeper-system")
	vap := named(t, objs, "ValidatingAdmissionPolicy", "hivekeeper-workloads")
	binding := named(t, objs, "ValidatingAdmissionPolicyBinding", "hivekeeper-workloads")
	if p, _, _ := unstructured.NestedString(binding.Object, "spec", "policyName"); p != vap.GetName() {
		t.Errorf("binding names policy %q", p)
	}
	if _, found, _ := unstructured.NestedMap(binding.Object, "spec", "matchResources"); found {
		t.Errorf("an all-namespaces install must bind every namespace")
	}
	if n := len(find(render(t, "hivekeeper", "hivekeeper-system", "--set", "admissionPolicy.enabled=false"), "ValidatingAdmissionPolicy")); n != 0 {
		t.Errorf("admissionPolicy.enabled=false renders %d policies", n)
	}
	scoped := named(t, render(t, "hivekeeper", "hivekeeper-system", "--set", "watchNamespaces={team-a,team-b}"), "ValidatingAdmissionPolicyBinding", "hivekeeper-workloads")
	exprs, _, _ := unstructured.NestedSlice(scoped.Object, "spec", "matchResources", "namespaceSelector", "matchExpressions")
	if len(exprs) != 1 || fmt.Sprint(exprs[0].(map[string]any)["values"]) != "[team-a team-b]" {
		t.Errorf("namespace-list binding selects %v", exprs)
	}
}

// defaultRedis becomes the --default-redis-* flags, each only when its
// value is set (the password Secret's key and the CA only with their
// Secret), and none by default.
func TestChartDefaultRedis(t *testing.T) {
	argsOf := func(set ...string) []string {
		var args []string
		for _, s := range set {
			args = append(args, "--set", s)
		}
		objs := render(t, "hivekeeper", "hivekeeper-system", args...)
		var out []string
		for _, a := range decode[appsv1.Deployment](t, find(objs, "Deployment")[0]).Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--default-redis") {
				out = append(out, a)
			}
		}
		return out
	}
	for _, tc := range []struct {
		set  []string
		want []string
	}{
		{nil, nil},
		{[]string{"defaultRedis.existingSecret=s"}, nil},
		{[]string{"defaultRedis.addr=redis:6379", "defaultRedis.existingSecretKey=k"}, []string{"--default-redis-addr=redis:6379"}},
		{[]string{"defaultRedis.addr=redis:6379", "defaultRedis.existingSecret=s", "defaultRedis.tls.enabled=true"},
			[]string{"--default-redis-addr=redis:6379", "--default-redis-secret-name=s", "--default-redis-tls-enabled"}},
		{[]string{"defaultRedis.addr=redis:6379", "defaultRedis.existingSecret=s", "defaultRedis.existingSecretKey=pw",
			"defaultRedis.tls.enabled=true", "defaultRedis.tls.caCertSecretRef.name=ca"},
			[]string{"--default-redis-addr=redis:6379", "--default-redis-secret-name=s", "--default-redis-secret-key=pw",
				"--default-redis-tls-enabled", "--default-redis-tls-ca-secret-name=ca", "--default-redis-tls-ca-secret-key=ca.crt"}},
	} {
		if got := argsOf(tc.set...); !slices.Equal(got, tc.want) {
			t.Errorf("%v: args %q, want %q", tc.set, got, tc.want)
		}
	}
}
