package virtualmcpserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// A session HMAC Secret that already exists (ToolHive's operator created
// it before a switch, say) is the server's key: the create's 409 is no
// error, the vMCP is deployed reading it, and its key is never rewritten,
// since a new key would end every session.
func TestExistingHMACSecretIsKept(t *testing.T) {
	existing := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "agg-hmac-secret"},
		Data: map[string][]byte{"hmac-secret": []byte("toolhive-operator-key-0123456789")}}
	f := newFixture(t, newVMCP("agg", inline), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup), existing)
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	var creates []string
	for _, a := range acts {
		if a.GetVerb() == "create" {
			creates = append(creates, a.GetResource().Resource)
		}
	}
	if len(creates) == 0 || creates[0] != "secrets" {
		t.Fatalf("the Secret's create was not tried first: %s", wt.Describe(acts))
	}
	f.converge("agg")
	ctx := context.Background()
	got, err := f.Kube.CoreV1().Secrets(testNS).Get(ctx, "agg-hmac-secret", metav1.GetOptions{})
	if err != nil || string(got.Data["hmac-secret"]) != "toolhive-operator-key-0123456789" {
		t.Errorf("the existing key was rewritten: %+v %v", got, err)
	}
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
	if err != nil || !readsHMACSecret(dep, "agg") {
		t.Errorf("the vMCP is not deployed reading the Secret: %v", err)
	}
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Errorf("converged: %s", wt.Describe(acts))
	}
}
