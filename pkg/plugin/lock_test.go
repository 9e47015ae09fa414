package plugin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// While one switch holds the record (here, blocked as it pauses Argo
// CD), a second switch and a switch --back are refused before any step,
// writing nothing, and name the holder; status shows it. The first then
// ends as usual and releases the record.
func TestASecondRunIsRefusedWhileOneHoldsTheRecord(t *testing.T) {
	ctx := context.Background()
	c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
	paused, resume := make(chan struct{}), make(chan struct{})
	dyn := c.dyn.(*dynamicfake.FakeDynamicClient)
	first := true
	dyn.PrependReactor("patch", "applications", func(clienttesting.Action) (bool, runtime.Object, error) {
		if first {
			first = false
			close(paused)
			<-resume
		}
		return false, nil, nil
	})
	type result struct {
		r   *SwitchReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := switchTo(ctx, c, testSwitchOptions(), &progress{w: &bytes.Buffer{}}, logr.Discard())
		done <- result{r, err}
	}()
	select {
	case <-paused:
	case res := <-done:
		t.Fatalf("the first switch ended before it paused Argo CD: %+v, %v", res.r, res.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first switch never paused Argo CD")
	}
	kube := c.kube.(*k8sfake.Clientset)
	kube.ClearActions()

	second := testSwitchOptions()
	second.target.User, second.host = "bob", "desk"
	for _, back := range []bool{false, true} {
		var out bytes.Buffer
		p := &progress{w: &out, text: true}
		var r *SwitchReport
		var err error
		if back {
			r, err = switchBack(ctx, c, second, p)
		} else {
			r, err = switchTo(ctx, c, second, p, logr.Discard())
		}
		if err != nil {
			t.Fatalf("back %v: %v", back, err)
		}
		if r.ExitCode != exitBlocked || len(r.Steps) != 0 || strings.Contains(out.String(), "- ") ||
			!strings.Contains(r.Refused, "a switch is in progress (phase switching), held by alice on laptop (kubectl-hivekeeper v1.2.3, switch) since ") ||
			!strings.Contains(r.Refused, "last step: hivekeeper's image registry.example.com/hivekeeper:v1 pulled and started") ||
			!strings.Contains(r.Refused, "--force takes it over only once it is older than its stated timeout of 1m0s") {
			t.Errorf("back %v: exit %d, steps %v, refused %q, output:\n%s", back, r.ExitCode, r.Steps, r.Refused, out.String())
		}
	}
	for _, a := range kube.Actions() {
		if w, ok := toWrite(a); ok {
			t.Errorf("a refused run wrote %s %s %s", w.verb, w.gvr.Resource, w.name)
		}
	}
	st, err := status(ctx, c.kube, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := st.write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"Switch: ConfigMap hivekeeper-system/hivekeeper-switch, phase switching, started ",
		"  held by alice on laptop (kubectl-hivekeeper v1.2.3, switch) since ",
		"  last step: hivekeeper's image registry.example.com/hivekeeper:v1 pulled and started",
		"ToolHive's operator: Deployment toolhive-system/toolhive-operator, 1 replica, 1 ready",
		"hivekeeper: Deployment hivekeeper-system/hivekeeper, 0 replicas, 0 ready",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("status lacks %q:\n%s", line, text.String())
		}
	}

	close(resume)
	res := <-done
	if res.err != nil || res.r.ExitCode != exitOK {
		t.Fatalf("the first switch: %v, %+v", res.err, res.r)
	}
	rec, err := readRecord(ctx, c.kube, "hivekeeper-system")
	if err != nil || rec == nil || rec.Holder != nil || rec.Phase != phaseSwitched || rec.Finished == nil {
		t.Errorf("the record after the first switch: %+v, %v", rec, err)
	}
}

// A record whose holder went silent for longer than its stated timeout
// (a run that died) is refused without --force, naming it; switch
// --back --force takes it over and goes back; a forward switch over it
// is still refused, as what it did must be undone first.
func TestForceTakesOverOnlyAStaleRecord(t *testing.T) {
	ctx := context.Background()
	mcpservers := crd("mcpservers", "MCPServer", "v1beta1")
	mcpservers.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true}, {Name: "v1beta1", Served: true, Storage: true}}
	c := switchClients(t, mcpservers)
	if r, err := switchTo(ctx, c, testSwitchOptions(), &progress{w: &bytes.Buffer{}}, logr.Discard()); err != nil || r.ExitCode != exitOK {
		t.Fatalf("switch: %v, %+v", err, r)
	}
	setHolder := func(silent time.Duration) {
		t.Helper()
		rec, err := readRecord(ctx, c.kube, "hivekeeper-system")
		if err != nil {
			t.Fatal(err)
		}
		at := metav1.NewTime(time.Now().Add(-silent).UTC().Truncate(time.Second))
		rec.Phase, rec.Holder = phaseGoingBack, &holder{User: "bob", Host: "desk", Version: "v1.2.2", Command: "switch --back",
			Since: at, Renewed: at, Timeout: metav1.Duration{Duration: 15 * time.Minute}}
		if err := saveRecord(ctx, c.kube, rec); err != nil {
			t.Fatal(err)
		}
	}
	force := testSwitchOptions()
	force.force = true

	setHolder(5 * time.Minute)
	if r, err := switchBack(ctx, c, force, &progress{w: &bytes.Buffer{}}); err != nil || r.ExitCode != exitBlocked ||
		!strings.Contains(r.Refused, "held by bob on desk") || !strings.Contains(r.Refused, "only once it is older than its stated timeout of 15m0s") {
		t.Errorf("--force over a live holder: %v, %+v", err, r)
	}

	setHolder(time.Hour)
	writes(c)
	if r, err := switchBack(ctx, c, testSwitchOptions(), &progress{w: &bytes.Buffer{}}); err != nil || r.ExitCode != exitBlocked ||
		!strings.Contains(r.Refused, "has not renewed it for 1h0m") || !strings.Contains(r.Refused, "more than its stated timeout of 15m0s") || !strings.Contains(r.Refused, "--force") {
		t.Errorf("a stale holder without --force: %v, %+v", err, r)
	}
	if r, err := switchTo(ctx, c, force, &progress{w: &bytes.Buffer{}}, logr.Discard()); err != nil || r.ExitCode != exitBlocked ||
		!strings.Contains(r.Refused, "records a switch (going-back)") {
		t.Errorf("a forward switch --force over a half-done switch --back: %v, %+v", err, r)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("refused runs wrote %v", w)
	}
	r, err := switchBack(ctx, c, force, &progress{w: &bytes.Buffer{}})
	if err != nil || r.ExitCode != exitOK {
		t.Fatalf("switch --back --force over a stale holder: %v, %+v", err, r)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "took the record over from bob on desk") }) {
		t.Errorf("notes %v", r.Notes)
	}
	if reasons := eventReasons(c); !slices.Contains(reasons, "TakenOver") {
		t.Errorf("events %v lack TakenOver", reasons)
	}
	if rec, err := readRecord(ctx, c.kube, "hivekeeper-system"); err != nil || rec.Phase != phaseBack || rec.Holder != nil {
		t.Errorf("the record after switch --back --force: %+v, %v", rec, err)
	}
}

// A run that finds, at a step, that the record changed under it (another
// run took it over) stops there, says so, and leaves the record alone:
// hivekeeper is not scaled up.
func TestARunThatLostTheRecordStops(t *testing.T) {
	c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
	kube := c.kube.(*k8sfake.Clientset)
	stopped := false
	kube.PrependReactor("patch", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.PatchAction).GetName() == "toolhive-operator" {
			stopped = true
		}
		return false, nil, nil
	})
	kube.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if stopped && a.(clienttesting.PatchAction).GetName() == recordName {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, recordName, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	writes(c)
	_, err := switchTo(context.Background(), c, testSwitchOptions(), &progress{w: &bytes.Buffer{}}, logr.Discard())
	if !errors.Is(err, errTaken) || !strings.Contains(err.Error(), "changed under this run") {
		t.Fatalf("switch: %v, want the record lost", err)
	}
	if slices.Contains(writes(c), "patch deployments hivekeeper") {
		t.Error("a run that lost the record went on to scale hivekeeper up")
	}
}

// Unless --yes, a switch names the cluster and asks; an answer other than
// yes refuses it before anything is written. With no terminal, switch
// without --yes is a usage error.
func TestConfirmation(t *testing.T) {
	c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
	o := testSwitchOptions()
	o.yes = false
	var asked string
	o.confirm = func(q string) (bool, error) { asked = q; return false, nil }
	writes(c)
	r, err := switchTo(context.Background(), c, o, &progress{w: &bytes.Buffer{}}, logr.Discard())
	if err != nil || r.ExitCode != exitBlocked || r.Refused != "not confirmed: nothing was changed" {
		t.Errorf("switch not confirmed: %v, %+v", err, r)
	}
	if want := "Switch the workloads of context prod, cluster prod-eu at https://prod.example.com, as alice from ToolHive's operator toolhive-system/toolhive-operator to hivekeeper hivekeeper-system/hivekeeper?"; asked != want {
		t.Errorf("asked %q, want %q", asked, want)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("a switch not confirmed wrote %v", w)
	}
	for _, answer := range []string{"y\n", "yes\n", "n\n", "\n", ""} {
		ok, _ := askOn(strings.NewReader(answer), &bytes.Buffer{})("?")
		if want := strings.HasPrefix(answer, "y"); ok != want {
			t.Errorf("answer %q: confirmed %v", answer, ok)
		}
	}

	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, args := range [][]string{{"switch"}, {"switch", "--back"}} {
		var out, errOut bytes.Buffer
		if code := Execute(context.Background(), "v1", args, devNull, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "pass --yes") {
			t.Errorf("%v with no terminal: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// A switch records events on its record (started, each step, finished)
// and on ToolHive's operator Deployment when it scales it.
func TestSwitchRecordsEvents(t *testing.T) {
	c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
	if r, err := switchTo(context.Background(), c, testSwitchOptions(), &progress{w: &bytes.Buffer{}}, logr.Discard()); err != nil || r.ExitCode != exitOK {
		t.Fatalf("switch: %v, %+v", err, r)
	}
	events, err := c.kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events.Items {
		got = append(got, e.InvolvedObject.Kind+" "+e.InvolvedObject.Name+" "+e.Reason)
	}
	for _, want := range []string{"ConfigMap hivekeeper-switch SwitchStarted", "ConfigMap hivekeeper-switch Step",
		"ConfigMap hivekeeper-switch Finished", "Deployment toolhive-operator ScaledDown"} {
		if !slices.Contains(got, want) {
			t.Errorf("events %v lack %q", got, want)
		}
	}
}

func eventReasons(c clients) []string {
	events, _ := c.kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Reason)
	}
	return out
}

// The cluster a switch names is the kubeconfig's: the current context (or
// --context), its cluster and user (or --cluster, --user), the server,
// and whom the user impersonates.
func TestTargetOfTheKubeconfig(t *testing.T) {
	kubeconfig := t.TempDir() + "/config"
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-eu
  cluster: {server: "https://prod.example.com:6443"}
- name: staging
  cluster: {server: "https://staging.example.com:6443"}
users:
- name: alice
  user: {token: x}
contexts:
- name: prod
  context: {cluster: prod-eu, user: alice}
- name: staging
  context: {cluster: staging, user: alice}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(g *globals)
		want Target
	}{
		{func(*globals) {}, Target{Context: "prod", Cluster: "prod-eu", Server: "https://prod.example.com:6443", User: "alice"}},
		{func(g *globals) { g.overrides.CurrentContext = "staging" }, Target{Context: "staging", Cluster: "staging", Server: "https://staging.example.com:6443", User: "alice"}},
		{func(g *globals) { g.overrides.AuthInfo.Impersonate = "bob" }, Target{Context: "prod", Cluster: "prod-eu", Server: "https://prod.example.com:6443", User: "alice as bob"}},
	} {
		g := &globals{kubeconfig: kubeconfig}
		tc.edit(g)
		cc := g.clientConfig()
		cfg, err := cc.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if got := g.targetOf(cc, cfg); got != tc.want {
			t.Errorf("target %+v, want %+v", got, tc.want)
		}
	}
}
