package plugin

import (
	"bytes"
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
)

// controllerDeployment is a hivekeeper controller Deployment as the
// chart labels it, with a sidecar before the controller's container.
func controllerDeployment(namespace, image, release string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hivekeeper", Labels: map[string]string{
			"app.kubernetes.io/part-of": "hivekeeper", "app.kubernetes.io/component": "controller", labelVersion: release}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "proxy", Image: "example.com/proxy:9.9.9"},
			{Name: "controller", Image: image},
		}}}},
	}
}

// version prints one line per controller, its version read from the
// image's tag or, for an image pinned by digest alone, from the chart's
// version label, and warns on stderr about the one whose version is not
// the plugin's; other Deployments are not listed.
func TestPrintControllerVersions(t *testing.T) {
	const version = "v0.2.0"
	kube := k8sfake.NewClientset(
		controllerDeployment("a", "ghcr.io/hivekeeper/hivekeeper:0.2.0", "0.2.0"),
		controllerDeployment("b", "registry.example.com:5000/hivekeeper@sha256:0123", "0.1.0"),
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "other", Labels: map[string]string{"app.kubernetes.io/component": "controller"}}},
	)
	var out, errOut bytes.Buffer
	if err := printControllerVersions(context.Background(), kube, "", version, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	wantOut := "controller a/hivekeeper: 0.2.0 (ghcr.io/hivekeeper/hivekeeper:0.2.0)\n" +
		"controller b/hivekeeper: 0.1.0 (registry.example.com:5000/hivekeeper@sha256:0123)\n"
	wantErr := "warning: the plugin is v0.2.0 but the controller b/hivekeeper runs 0.1.0: use the plugin of the controller's release\n"
	if out.String() != wantOut || errOut.String() != wantErr {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	actions := kube.Actions()
	if len(actions) != 1 || !actions[0].Matches("list", "deployments") || actions[0].GetNamespace() != "" {
		t.Errorf("actions %v, want one list of deployments in every namespace", actions)
	}

	// -n names the namespace; there, no controller is said, not an error.
	out.Reset()
	errOut.Reset()
	if err := printControllerVersions(context.Background(), kube, "c", version, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if out.String() != "controller: none found (no Deployment labelled "+hivekeeperSelector+" in namespace c)\n" || errOut.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
}

// A development build or a controller whose version is unknown is skew.
func TestSameVersion(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"0.1.0", "0.1.0", true},
		{"v0.1.0", "0.1.0", true},
		{"0.1.0", "0.1.1", false},
		{"dev", "0.1.0", false},
		{"0.1.0", "", false},
		{"", "", false},
	} {
		if got := sameVersion(c.a, c.b); got != c.want {
			t.Errorf("sameVersion(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
