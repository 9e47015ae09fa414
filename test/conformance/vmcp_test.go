package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestVMCPServes starts ToolHive's `vmcp serve` as a VirtualMCPServer's
// Deployment would run it, on the config hivekeeper generated:
//
//   - it answers its health endpoint (/health, 200 with status ok);
//   - it discovers the group's members through the API (outgoingAuth
//     source discovered, the default), with the permissions of the
//     account hivekeeper bound: /readyz reports dynamic mode, and /status
//     names the group and exactly the group's two MCPServers with the
//     transports their proxies expose;
//   - it authenticates with the OIDC block hivekeeper rendered into
//     incomingAuth: initialize with a token the test issuer signed for the
//     reference's audience is answered (200, server name = the
//     VirtualMCPServer's), and every token of refusals gets 401 on /mcp.
//
// The backends are the proxies' cluster DNS names, which nothing serves
// here; vmcp does not contact them to start, so none are stood in for.
func TestVMCPServes(t *testing.T) {
	env, ns := runtimeSetUp(t)
	iss := startIssuer(t)
	applyTemplate(t, env, ns, "testdata/runtime/vmcp.yaml", map[string]string{"ISSUER": iss.URL})
	const name = "team-vmcp"
	port := startVMCP(t, env, ns, name)
	waitServing(t, port)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var health struct{ Status string }
	if getJSON(t, base+"/health", &health); health.Status != "ok" {
		t.Errorf("/health: %+v, want status ok", health)
	}

	waitVMCPBackends(t, base, "events", "fetch")
	var ready struct{ Status, Mode string }
	getJSON(t, base+"/readyz", &ready)
	if ready.Status != "ready" || ready.Mode != "dynamic" {
		t.Errorf("/readyz: %+v, want ready in dynamic mode (vmcp discovers the members)", ready)
	}
	var status struct {
		GroupRef string `json:"group_ref"`
		Backends []struct{ Name, Transport string }
	}
	getJSON(t, base+"/status", &status)
	var backends []string
	for _, b := range status.Backends {
		backends = append(backends, b.Name+"="+b.Transport)
	}
	slices.Sort(backends)
	if want := []string{"events=sse", "fetch=streamable-http"}; status.GroupRef != "team" || !slices.Equal(backends, want) {
		t.Errorf("/status: group %q backends %v, want group team with %v", status.GroupRef, backends, want)
	}

	resp, body := mcpCall(t, base+"/mcp", iss.token(t, iss.claims("team-vmcp")), "", initializeRequest)
	var init struct {
		Result struct {
			ServerInfo struct{ Name string }
		}
	}
	if err := json.Unmarshal(body, &init); resp.StatusCode != http.StatusOK || err != nil || init.Result.ServerInfo.Name != name {
		t.Errorf("initialize with a valid token: %s %q: %s, want 200 from server %q", resp.Status, resp.Header.Get("WWW-Authenticate"), body, name)
	}
	expectRefused(t, base+"/mcp", iss, refusals(t, iss, "team-vmcp"))
}

// TestVMCPAggregatesServerAndRemoteProxy runs ToolHive's `vmcp serve` on
// the config hivekeeper generated for a group of one MCPServer and one
// MCPRemoteProxy, both offering the same two tools: config.yaml lists
// each at its proxy's cluster URL with its transport path, and vmcp —
// given loopback stand-ins for those two URLs, servers of the test's own —
// aggregates both under prefix conflict resolution: tools/list through
// vmcp shows every tool once per backend, named <backend>_<tool>, and the
// composite tool of a referenced VirtualMCPCompositeToolDefinition, whose
// call runs one step on each backend.
func TestVMCPAggregatesServerAndRemoteProxy(t *testing.T) {
	env, ns := runtimeSetUp(t)
	local, far := startRemoteMCP(t, "/mcp"), startRemoteMCP(t, "/mcp")
	applyTemplate(t, env, ns, "testdata/runtime/vmcp-aggregate.yaml", map[string]string{"REMOTE_URL": far.StandIn})
	const name = "mixed-vmcp"
	cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(name))
	localURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:8080/mcp", naming.MCPServerServiceName("local"), ns)
	farURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:8080/mcp", naming.RemoteProxyServiceName("far"), ns)
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		cm = waitConfigMap(t, env, ns, naming.VMCPConfigMapName(name))
		return strings.Contains(cm.Data[naming.VMCPConfigKey], farURL), nil
	}, "the remote proxy in config.yaml")
	port := startVMCP(t, env, ns, name, localURL, local.URL, farURL, far.URL)
	waitServing(t, port)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)

	session, names := vmcpToolNames(t, endpoint)
	want := []string{"far_" + remoteOtherTool, "far_" + remoteToolName, "local_" + remoteOtherTool, "local_" + remoteToolName, "echo_both"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools/list through vmcp: %v, want %v", names, want)
	}
	for _, r := range []*remoteMCP{local, far} {
		if !slices.ContainsFunc(r.requests(), func(q remoteRequest) bool { return q.Method == "tools/list" }) {
			t.Errorf("backend %s was never asked for its tools", r.URL)
		}
	}

	resp, body := mcpCall(t, endpoint, "", session, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo_both","arguments":{"word":"hello"}}}`)
	var called struct {
		Result *struct {
			IsError bool `json:"isError"`
		}
		Error *struct{ Message string }
	}
	if err := json.Unmarshal(jsonRPCBody(body), &called); resp.StatusCode != http.StatusOK || err != nil || called.Result == nil || called.Result.IsError {
		t.Fatalf("tools/call echo_both: %s %v: %s", resp.Status, err, body)
	}
	for r, tool := range map[*remoteMCP]string{local: remoteToolName, far: remoteOtherTool} {
		if !slices.ContainsFunc(r.requests(), func(q remoteRequest) bool { return q.Method == "tools/call" && q.Tool == tool }) {
			t.Errorf("the composite tool's step never called %s on %s", tool, r.URL)
		}
	}
}

// startVMCP runs ToolHive's vmcp as the VirtualMCPServer's Deployment
// <name> would: the container's args and env as hivekeeper wrote them,
// with only the config path (the mounted ConfigMap becomes a file) and
// the port (a free loopback one) moved. Given VMCP_NAME and
// VMCP_NAMESPACE, vmcp reports its status to the API server with
// in-cluster credentials, and without them it does not start; so it runs
// with what a pod has: the KUBERNETES_SERVICE_* env and a token of the
// Deployment's service account with the API server's CA at
// /var/run/secrets/kubernetes.io/serviceaccount (see withPodFiles). It
// returns the port; vmcp's output is logged when the test fails. The
// config.yaml written for vmcp has each of replace's old URLs replaced by
// its new one (cluster addresses by loopback stand-ins); each must occur.
func startVMCP(t *testing.T, env *framework.Env, ns, name string, replace ...string) int {
	t.Helper()
	port, _ := startVMCPOutput(t, env, ns, name, replace...)
	return port
}

// startVMCPOutput is startVMCP that also returns vmcp's output as it
// grows.
func startVMCPOutput(t *testing.T, env *framework.Env, ns, name string, replace ...string) (int, *framework.SyncBuffer) {
	t.Helper()
	cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(name))
	c, tmpl := deploymentContainer(t, env, ns, name, naming.VMCPContainerName)
	dir := t.TempDir()
	config := filepath.Join(dir, naming.VMCPConfigKey)
	// Every key of the ConfigMap is a file of the mounted volume (the
	// embedded authorization server's authserver-config.yaml beside
	// config.yaml); each replacement must occur in one of them.
	files := maps.Clone(cm.Data)
	for i := 0; i+1 < len(replace); i += 2 {
		found := false
		for key, data := range files {
			found = found || strings.Contains(data, replace[i])
			files[key] = strings.ReplaceAll(data, replace[i], replace[i+1])
		}
		if !found {
			t.Fatalf("the config of %s lacks %s:\n%s", name, replace[i], cm.Data[naming.VMCPConfigKey])
		}
	}
	for key, data := range files {
		if err := os.WriteFile(filepath.Join(dir, key), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(c.Args)
	moved := 0
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--config="):
			args[i], moved = "--config="+config, moved+1
		case strings.HasPrefix(a, "--port="):
			args[i], moved = "--port="+strconv.Itoa(port), moved+1
		}
	}
	if moved != 2 {
		t.Fatalf("the vmcp container's args %q lack --config= or --port=", c.Args)
	}
	api, err := url.Parse(env.Server.URL)
	if err != nil {
		t.Fatal(err)
	}
	cmd := withPodFiles(t, podFiles(t, env, ns, tmpl.Spec.ServiceAccountName), filepath.Join(toolhiveBin, "vmcp"), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"KUBERNETES_SERVICE_HOST=" + api.Hostname(), "KUBERNETES_SERVICE_PORT=" + api.Port()},
		containerEnv(t, env, ns, c, tmpl.Annotations)...)
	return port, startProcess(t, "vmcp", cmd)
}

// podFiles writes what the kubelet projects into a pod for its service
// account: a token the API server issued for it, the API server's CA and
// the namespace, under secrets/kubernetes.io/serviceaccount of a new
// folder, which it returns.
func podFiles(t *testing.T, env *framework.Env, ns, serviceAccount string) string {
	t.Helper()
	ctx := context.Background()
	waitFor(t, func() (*corev1.ServiceAccount, error) {
		return env.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, serviceAccount, metav1.GetOptions{})
	}, "ServiceAccount "+ns+"/"+serviceAccount)
	tr, err := env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	sa := filepath.Join(root, "secrets", "kubernetes.io", "serviceaccount")
	if err := os.MkdirAll(sa, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string][]byte{
		"token": []byte(tr.Status.Token), "ca.crt": env.Config.TLSClientConfig.CAData, "namespace": []byte(ns),
	} {
		if err := os.WriteFile(filepath.Join(sa, file), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// withPodFiles returns a command that runs name in a private mount
// namespace whose /var/run is podRoot, so files a pod finds at fixed
// paths (client-go's in-cluster config reads
// /var/run/secrets/kubernetes.io/serviceaccount) are there for this
// process alone, and the machine's own /var/run is not touched. It fails
// the test where no mount namespace can be made: vmcp reads those files
// from fixed paths (rest.InClusterConfig), and a machine that cannot give
// them would otherwise pass the vMCP runtime tests without running one.
func withPodFiles(t *testing.T, podRoot, name string, args ...string) *exec.Cmd {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("vmcp needs a pod's service-account files, which this suite provides in a mount namespace made with unshare (Debian's util-linux): %v", err)
	}
	flags := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		flags = append(flags, "--map-root-user")
	}
	if out, err := exec.Command(unshare, append(flags, "true")...).CombinedOutput(); err != nil {
		t.Fatalf("vmcp needs a pod's service-account files, which this suite provides in a mount namespace; this machine refuses one (run as root, or allow unprivileged user namespaces): %v: %s", err, out)
	}
	script := `mount --bind "$0" /var/run && exec "$@"`
	return exec.Command(unshare, append(append(flags, "sh", "-c", script, podRoot, name), args...)...)
}

// getJSON decodes the JSON answer of a GET that must succeed.
func getJSON(t *testing.T, u string, into any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// vmcpToolNames opens an MCP session on a vmcp endpoint and returns the
// session and the sorted names tools/list gives through it.
func vmcpToolNames(t *testing.T, endpoint string) (session string, names []string) {
	t.Helper()
	resp, body := mcpCall(t, endpoint, "", "", initializeRequest)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s: %s", resp.Status, body)
	}
	session = resp.Header.Get("Mcp-Session-Id")
	if resp, body := mcpCall(t, endpoint, "", session, initializedNotification); resp.StatusCode >= 300 {
		t.Fatalf("initialized: %s: %s", resp.Status, body)
	}
	resp, body = mcpCall(t, endpoint, "", session, toolsListRequest)
	var answer struct {
		Result struct {
			Tools []struct{ Name string }
		}
	}
	if err := json.Unmarshal(jsonRPCBody(body), &answer); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("tools/list: %s %v: %s", resp.Status, err, body)
	}
	for _, tool := range answer.Result.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return session, names
}

// TestVMCPAuthzFromConfigMap runs ToolHive's `vmcp serve` on the config
// hivekeeper generated for a vMCP whose Cedar authorization is a runner
// authorization file in a ConfigMap: vmcp starts with the policies,
// entities and claim settings hivekeeper wrote into incomingAuth.authz,
// and answers an authenticated, permitted initialize.
func TestVMCPAuthzFromConfigMap(t *testing.T) {
	env, ns := runtimeSetUp(t)
	iss := startIssuer(t)
	applyTemplate(t, env, ns, "testdata/runtime/vmcp-authz-configmap.yaml", map[string]string{"ISSUER": iss.URL})
	const name = "team-vmcp"
	port := startVMCP(t, env, ns, name)
	waitServing(t, port)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var health struct{ Status string }
	if getJSON(t, base+"/health", &health); health.Status != "ok" {
		t.Errorf("/health: %+v, want status ok", health)
	}
	resp, body := mcpCall(t, base+"/mcp", iss.token(t, iss.claims("team-vmcp")), "", initializeRequest)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("initialize with a valid token: %s: %s, want 200", resp.Status, body)
	}
	expectRefused(t, base+"/mcp", iss, refusals(t, iss, "team-vmcp"))
}
