package apiserver

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	thv1beta1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// MCPWebhookConfig is served as v1alpha1, the version ToolHive's manifests
// use, and as v1beta1, the version hivekeeper reads: an object created as
// one is the same object read as the other. The schema has ToolHive's
// rules: at least one webhook, a failure policy of fail or ignore
// (defaulted to fail), a name of at most 63 characters.
func TestWebhookConfigVersionsAndSchema(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	alpha := env.Dynamic.Resource(schema.GroupVersionResource{Group: thv1beta1.GroupName, Version: "v1alpha1", Resource: "mcpwebhookconfigs"}).Namespace(ns)
	obj := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": thv1beta1.GroupName + "/v1alpha1", "kind": thv1beta1.KindMCPWebhookConfig,
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	hook := map[string]any{"name": "policy", "url": "https://policy.example.com/validate", "timeout": "5s",
		"hmacSecretRef": map[string]any{"name": "hmac", "key": "key"}}
	if _, err := alpha.Create(ctx(t), obj("hooks", map[string]any{"validating": []any{hook}}),
		metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
		t.Fatalf("a ToolHive v1alpha1 manifest: %v", err)
	}
	got, err := env.Toolhive.ToolhiveV1beta1().MCPWebhookConfigs(ns).Get(ctx(t), "hooks", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read as v1beta1: %v", err)
	}
	if v := got.Spec.Validating; len(v) != 1 || v[0].Name != "policy" || *v[0].Timeout != "5s" ||
		v[0].FailurePolicy != thv1beta1.WebhookFailurePolicyFail || v[0].HMACSecretRef.Name != "hmac" {
		t.Errorf("read as v1beta1: %+v", got.Spec)
	}

	for name, tc := range map[string]struct {
		spec map[string]any
		msg  string
	}{
		"no webhook":     {map[string]any{"validating": []any{}}, "at least one validating or mutating webhook must be defined"},
		"failure policy": {map[string]any{"mutating": []any{map[string]any{"name": "m", "url": "https://m.example.com", "failurePolicy": "retry"}}}, "failurePolicy"},
		"long name":      {map[string]any{"mutating": []any{map[string]any{"name": strings.Repeat("n", 64), "url": "https://m.example.com"}}}, "name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := alpha.Create(ctx(t), obj("bad", tc.spec), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("create error = %v, want Invalid naming %q", err, tc.msg)
			}
		})
	}
}
