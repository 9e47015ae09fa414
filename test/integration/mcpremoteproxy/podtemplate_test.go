package mcpremoteproxy

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// realisticTemplate is a podTemplateSpec as a platform team writes one,
// full of fields the API server defaults or canonicalises inside: probes
// without timeouts, a fieldRef and a resourceFieldRef without apiVersion
// or divisor, volume sources without modes, a projected token without an
// expiry, quantities in non-canonical spelling, a sidecar and an init
// container without pull policies or termination message settings.
const realisticTemplate = `{
  "metadata": {"labels": {"team": "payments"}, "annotations": {"prometheus.io/scrape": "true"}},
  "spec": {
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "mcp", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 120}],
    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100,
      "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "mcpremoteproxy"}}}}]}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
      "labelSelector": {"matchLabels": {"app": "mcpremoteproxy"}}}],
    "securityContext": {"runAsUser": 2000, "runAsGroup": 2000, "fsGroup": 2000, "supplementalGroups": [3000]},
    "imagePullSecrets": [{"name": "corp-registry"}],
    "terminationGracePeriodSeconds": 45,
    "hostAliases": [{"ip": "10.0.0.10", "hostnames": ["idp.corp"]}],
    "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
    "volumes": [
      {"name": "corp-ca", "secret": {"secretName": "corp-ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
      {"name": "cache", "emptyDir": {"sizeLimit": "1024Mi"}},
      {"name": "settings", "configMap": {"name": "proxy-settings", "optional": true}},
      {"name": "podinfo", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
      {"name": "vendor-token", "projected": {"sources": [{"serviceAccountToken": {"audience": "vendor", "path": "token"}}]}}
    ],
    "initContainers": [{"name": "wait-for-idp", "image": "busybox:1.36", "command": ["sh", "-c", "true"],
      "resources": {"limits": {"cpu": "0.1", "memory": "16Mi"}}}],
    "containers": [
      {"name": "toolhive",
       "env": [{"name": "SSL_CERT_DIR", "value": "/etc/corp-ca"},
               {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
               {"name": "MEM_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}],
       "volumeMounts": [{"name": "corp-ca", "mountPath": "/etc/corp-ca", "readOnly": true},
                        {"name": "cache", "mountPath": "/var/cache/mcp"},
                        {"name": "settings", "mountPath": "/etc/proxy-settings"},
                        {"name": "vendor-token", "mountPath": "/var/run/vendor"}],
       "resources": {"requests": {"cpu": "0.1", "memory": "64Mi"}, "limits": {"memory": "0.5Gi"}},
       "securityContext": {"runAsUser": 2000},
       "readinessProbe": {"initialDelaySeconds": 2}},
      {"name": "log-shipper", "image": "fluent/fluent-bit:3.0",
       "ports": [{"name": "metrics", "containerPort": 2020}],
       "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
       "livenessProbe": {"httpGet": {"path": "/", "port": 2020}},
       "volumeMounts": [{"name": "cache", "mountPath": "/cache", "readOnly": true}]}
    ]
  }
}`

// waitPodTemplateValid waits until the proxy's status describes its
// current generation with PodTemplateValid of the given status.
func waitPodTemplateValid(t *testing.T, env *framework.Env, ns, name string, status metav1.ConditionStatus) {
	t.Helper()
	framework.Eventually(t, settle, func() (bool, error) {
		p, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionPodTemplateValid)
		return p.Status.ObservedGeneration == p.Generation && c != nil && c.Status == status, fmt.Errorf("status %+v", p.Status)
	}, "%s: PodTemplateValid=%s", name, status)
}

// On a real API server, whose defaulting fills in fields all over a
// template: a proxy with a realistic podTemplateSpec converges and then
// costs no write at all; an edit of the template rolls the Deployment
// exactly once; an invalid template leaves it alone with
// PodTemplateValid=False and one Warning event; removing the template
// rolls once more and takes away what it added.
func TestPodTemplateSpecSteadyState(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	ctx := testCtx(t)
	const name = "templated"
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Create(ctx, &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: thv1.MCPRemoteProxySpec{
			RemoteURL:       "https://mcp.vendor.example.com/mcp",
			Resources:       thv1.ResourceRequirements{Limits: thv1.ResourceList{CPU: "500m"}},
			PodTemplateSpec: &runtime.RawExtension{Raw: []byte(realisticTemplate)},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodTemplateValid(t, env, ns, name, metav1.ConditionTrue)
	dep := waitDeployment(t, env, ns, name)
	ps := dep.Spec.Template.Spec
	if len(ps.InitContainers) != 1 || len(ps.Containers) != 2 || ps.NodeSelector["kubernetes.io/os"] != "linux" ||
		dep.Annotations[naming.AnnotationPodTemplateSpecHash] == "" || dep.Spec.Template.Labels["team"] != "payments" {
		t.Errorf("template not merged: %+v", dep)
	}
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)
	dep = waitDeployment(t, env, ns, name)

	// An edit rolls once.
	patchSpec(t, env, ns, name, `{"podTemplateSpec":{"spec":{"nodeSelector":{"kubernetes.io/os":"linux","pool":"mcp"}}}}`)
	framework.Eventually(t, settle, func() (bool, error) {
		return waitDeployment(t, env, ns, name).Spec.Template.Spec.NodeSelector["pool"] == "mcp", nil
	}, "the edited nodeSelector on the Deployment")
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	edited := waitDeployment(t, env, ns, name)
	if edited.Generation != dep.Generation+1 {
		t.Errorf("Deployment generation %d -> %d after an edit, want exactly one rollout", dep.Generation, edited.Generation)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)

	// An invalid template: reported, the Deployment untouched.
	patchSpec(t, env, ns, name, `{"podTemplateSpec":{"spec":{"nodeSelector":["pool"]}}}`)
	waitPodTemplateValid(t, env, ns, name, metav1.ConditionFalse)
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	if got := waitDeployment(t, env, ns, name); got.ResourceVersion != edited.ResourceVersion {
		t.Errorf("an invalid template wrote the Deployment")
	}
	if n := warnings(t, env, ns, name, thv1.ReasonPodTemplateInvalid); n != 1 {
		t.Errorf("%d Warning events %s, want 1", n, thv1.ReasonPodTemplateInvalid)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)

	// The template removed: one rollout, nothing of it left.
	patchSpec(t, env, ns, name, `{"podTemplateSpec":null}`)
	framework.Eventually(t, settle, func() (bool, error) {
		p, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(p.Status.Conditions, thv1.ConditionConfigurationValid) &&
			meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionPodTemplateValid) == nil, err
	}, "PodTemplateValid gone with the template")
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	plain := waitDeployment(t, env, ns, name)
	if plain.Generation != edited.Generation+1 {
		t.Errorf("Deployment generation %d -> %d after removing the template, want exactly one rollout", edited.Generation, plain.Generation)
	}
	ps = plain.Spec.Template.Spec
	if _, ok := plain.Annotations[naming.AnnotationPodTemplateSpecHash]; ok || len(ps.NodeSelector) != 0 || len(ps.Tolerations) != 0 ||
		ps.Affinity != nil || len(ps.InitContainers) != 0 || len(ps.Containers) != 1 || len(ps.HostAliases) != 0 ||
		len(ps.SecurityContext.SupplementalGroups) != 0 || *ps.TerminationGracePeriodSeconds != 30 || len(ps.Volumes) != 1 {
		var vols []string
		for _, v := range ps.Volumes {
			vols = append(vols, v.Name)
		}
		t.Errorf("template left behind: hash annotation %v, nodeSelector %v, tolerations %v, affinity %v, %d init containers, %d containers, "+
			"host aliases %v, supplemental groups %v, grace %v, volumes %v",
			ok, ps.NodeSelector, ps.Tolerations, ps.Affinity, len(ps.InitContainers), len(ps.Containers), ps.HostAliases,
			ps.SecurityContext.SupplementalGroups, *ps.TerminationGracePeriodSeconds, vols)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)
}
