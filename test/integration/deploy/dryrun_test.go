package deploy_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// standInCRD is a stand-in for another project's CRD (the Prometheus
// Operator's ServiceMonitor and PrometheusRule, cert-manager's
// Certificate): the kind and group only, any content. The dry-run below
// checks the objects map to a served resource; their fields are those
// projects' to validate.
func standInCRD(group, kind, plural string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{
				"kind": kind, "listKind": kind + "List",
				"plural": plural, "singular": strings.ToLower(kind),
			},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
}

// Every object the chart renders, CRDs included, is accepted by a real API
// server: schemas, defaulting, admission and RBAC escalation checks run;
// nothing is stored.
func TestRenderedChartPassesServerSideDryRun(t *testing.T) {
	env := framework.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := newApplier(t, env.Config)
	for _, crd := range []*unstructured.Unstructured{
		standInCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
		standInCRD("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
		standInCRD("cert-manager.io", "Certificate", "certificates"),
	} {
		if err := admin.apply(ctx, crd, false); err != nil {
			t.Fatalf("installing the stand-in CRD %s: %v", crd.GetName(), err)
		}
	}

	root := repoRoot(t)
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	cases := map[string][]string{
		"default":     nil,
		"namespaces":  {"--set", "watchNamespaces={" + teamA + "," + teamB + "}"},
		"monitoring":  {"-f", filepath.Join(root, "deploy", "charts", "hivekeeper", "ci", "monitoring-values.yaml")},
		"certmanager": {"-f", filepath.Join(root, "deploy", "charts", "hivekeeper", "ci", "certmanager-values.yaml")},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			objs := render(t, uniqueRelease(t), ns, append(args, "--include-crds")...)
			kinds := map[string]int{}
			for _, obj := range objs {
				kinds[obj.GetKind()]++
				if err := admin.apply(ctx, obj, true); err != nil {
					t.Errorf("dry-run of %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
				}
			}
			t.Logf("dry-run accepted %v", kinds)
			if want := framework.ServedKinds(); kinds["CustomResourceDefinition"] != want || kinds["Deployment"] != 1 {
				t.Errorf("rendered %v, want %d CRDs and a Deployment", kinds, want)
			}
			// Dry run means nothing was stored.
			dep := find(objs, "Deployment")[0]
			if _, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, dep.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("dry-run stored the Deployment (get: %v)", err)
			}
		})
	}
}
