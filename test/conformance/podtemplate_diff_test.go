package conformance_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// comparePodTemplates compares, for an MCPRemoteProxy whose manifest has a
// podTemplateSpec, the proxy Deployment's pod template as both operators
// wrote it, projected onto what the template sets: every field the user
// wrote, read back from each live Deployment (list entries matched by
// name, mount path or port, as the strategic merge matches them). What
// each operator builds around it (args, probes, its own env) is not
// compared: only that both merged the user's fields the same way, after
// the same API server defaulting.
func comparePodTemplates(t *testing.T, hive, thv *framework.Env, c *diffCase, w *diffWorkload) {
	t.Helper()
	if w.Kind != thv1.KindMCPRemoteProxy || w.skip != nil {
		return
	}
	var tpl map[string]any
	for _, o := range c.Objects {
		if o.GetKind() == w.Kind && o.GetName() == w.Name {
			tpl, _, _ = unstructured.NestedMap(o.Object, "spec", "podTemplateSpec")
		}
	}
	if tpl == nil {
		return
	}
	read := func(e *framework.Env) any {
		var got map[string]any
		framework.Eventually(t, 30*time.Second, func() (bool, error) {
			d, err := e.Kube.AppsV1().Deployments(c.Namespace).Get(context.Background(), w.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			b, err := json.Marshal(d.Spec.Template)
			if err != nil {
				return false, err
			}
			return true, json.Unmarshal(b, &got)
		}, "Deployment %s/%s", c.Namespace, w.Name)
		return project(tpl, got)
	}
	a, b := read(thv), read(hive)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		t.Errorf("%s: the pod template fields podTemplateSpec sets differ:\nToolHive's operator: %s\nhivekeeper:          %s", w.ID(), ja, jb)
		return
	}
	j, _ := json.Marshal(a)
	t.Logf("%s: the Deployments' pod templates agree on every field podTemplateSpec sets: %s", w.ID(), j)
}

// project returns the parts of live that the user's template names: for
// an object the keys the template has, for a list of named entries the
// live entries of those names, and otherwise the live value whole.
func project(user, live any) any {
	switch u := user.(type) {
	case map[string]any:
		l, _ := live.(map[string]any)
		out := map[string]any{}
		for k, uv := range u {
			out[k] = project(uv, l[k])
		}
		return out
	case []any:
		l, _ := live.([]any)
		out := make([]any, 0, len(u))
		for _, ui := range u {
			um, ok := ui.(map[string]any)
			key := mergeKey(um)
			if !ok || key == "" {
				return live
			}
			var match any
			for _, li := range l {
				if lm, ok := li.(map[string]any); ok && reflect.DeepEqual(lm[key], um[key]) {
					match = li
				}
			}
			out = append(out, project(ui, match))
		}
		return out
	}
	return live
}

// mergeKey is the key a list entry is matched by: the first of the
// strategic merge keys of pod template lists the entry has.
func mergeKey(entry map[string]any) string {
	for _, k := range []string{"name", "mountPath", "containerPort"} {
		if _, ok := entry[k]; ok {
			return k
		}
	}
	return ""
}
