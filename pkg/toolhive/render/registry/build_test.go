package registry

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/drift/drifttest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

const testNS = "team-a"

var testInput = Input{Image: "ghcr.io/stacklok/thv-registry-api:test", ClusterRole: "hivekeeper-registry-api"}

func newRegistry(mut ...func(*thv1.MCPRegistry)) *thv1.MCPRegistry {
	return toolhivetest.NewMCPRegistry(testNS, "reg", mut...)
}

func raw(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }

// option dimensions of the parity table.
var (
	volumeSets = map[string]func(*thv1.MCPRegistry){
		"none": func(*thv1.MCPRegistry) {},
		"configmap": func(r *thv1.MCPRegistry) {
			r.Spec.Volumes = []apiextensionsv1.JSON{raw(`{"name":"data","configMap":{"name":"prod-registry","items":[{"key":"registry.json","path":"registry.json"}]}}`)}
			r.Spec.VolumeMounts = []apiextensionsv1.JSON{raw(`{"name":"data","mountPath":"/config/registry/production","readOnly":true}`)}
		},
	}
	pgpass = map[string]func(*thv1.MCPRegistry){
		"none": func(*thv1.MCPRegistry) {},
		"set": func(r *thv1.MCPRegistry) {
			r.Spec.PGPassSecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pg"}, Key: ".pgpass"}
		},
	}
	registryTemplates = map[string]string{"none": "", "empty": "{}", "full": toolhivetest.RegistryFullTemplate}
	pullSecrets       = map[string][]corev1.LocalObjectReference{"none": nil, "two": {{Name: "a"}, {Name: "b"}}}
)

// TestBuildDriftParity is invariant 3: for every option combination the
// built children, fed back as live after a JSON round trip and the API
// server's defaults, show no drift and need no recreation.
func TestBuildDriftParity(t *testing.T) {
	n := 0
	for vName, vols := range volumeSets {
		for pName, pg := range pgpass {
			for tName, tpl := range registryTemplates {
				for sName, secrets := range pullSecrets {
					name := fmt.Sprintf("volumes-%s/pgpass-%s/template-%s/pullsecrets-%s", vName, pName, tName, sName)
					n++
					r := newRegistry(vols, pg, func(r *thv1.MCPRegistry) {
						if tpl != "" {
							r.Spec.PodTemplateSpec = toolhivetest.Raw(tpl)
						}
						r.Spec.ImagePullSecrets = secrets
					})
					out, err := Build(r, testInput)
					if err != nil {
						t.Fatalf("%s: build: %v", name, err)
					}
					dep := drifttest.RoundTrip(out.Deployment)
					drifttest.DefaultDeployment(dep)
					svc := drifttest.RoundTrip(out.Service)
					drifttest.DefaultService(svc)
					for child, fields := range map[string][]string{
						"configmap":      drift.DiffConfigMap(out.ConfigMap, drifttest.RoundTrip(out.ConfigMap)),
						"serviceaccount": drift.DiffServiceAccountWithPullSecrets(out.ServiceAccount, drifttest.RoundTrip(out.ServiceAccount)),
						"rolebinding":    drift.DiffRoleBinding(out.RoleBinding, drifttest.RoundTrip(out.RoleBinding)),
						"deployment":     drift.DiffDeploymentWholePod(out.Deployment, dep),
						"deployment-raw": drift.DiffDeploymentWholePod(out.Deployment, out.Deployment),
						"service":        drift.DiffService(out.Service, svc),
					} {
						if len(fields) != 0 {
							t.Errorf("%s: %s drifted right after build: %v", name, child, fields)
						}
					}
					if drift.DeploymentNeedsRecreate(out.Deployment, dep) || drift.RoleBindingNeedsRecreate(out.RoleBinding, drifttest.RoundTrip(out.RoleBinding)) {
						t.Errorf("%s: immutable field drift right after build", name)
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

// TestBuildChildren pins what ToolHive's operator writes: names, labels,
// the registry API container, the configuration volume, the hashes.
func TestBuildChildren(t *testing.T) {
	r := newRegistry(volumeSets["configmap"], pgpass["set"])
	out, err := Build(r, testInput)
	if err != nil {
		t.Fatal(err)
	}
	if out.ConfigMap.Name != "reg-registry-server-config" || out.ConfigMap.Data["config.yaml"] != r.Spec.ConfigYAML {
		t.Errorf("configmap %s %v", out.ConfigMap.Name, out.ConfigMap.Data)
	}
	if out.ServiceAccount.Name != "reg-registry-api" || out.RoleBinding.Name != "reg-registry-api" ||
		out.RoleBinding.RoleRef.Kind != "ClusterRole" || out.RoleBinding.RoleRef.Name != testInput.ClusterRole ||
		out.RoleBinding.Subjects[0].Name != "reg-registry-api" {
		t.Errorf("account %s, binding %s %+v %+v", out.ServiceAccount.Name, out.RoleBinding.Name, out.RoleBinding.RoleRef, out.RoleBinding.Subjects)
	}
	wantLabels := map[string]string{"app.kubernetes.io/name": "reg-api", "app.kubernetes.io/component": "registry-api",
		"app.kubernetes.io/managed-by": "toolhive-operator", "toolhive.stacklok.io/registry-name": "reg"}
	d := out.Deployment
	if d.Name != "reg-api" || out.Service.Name != "reg-api" || fmt.Sprint(d.Labels) != fmt.Sprint(wantLabels) ||
		fmt.Sprint(d.Spec.Template.Labels) != fmt.Sprint(wantLabels) || fmt.Sprint(out.Service.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("deployment %s %v, template %v, service %s %v", d.Name, d.Labels, d.Spec.Template.Labels, out.Service.Name, out.Service.Labels)
	}
	wantSelector := map[string]string{"app.kubernetes.io/name": "reg-api", "app.kubernetes.io/component": "registry-api"}
	if fmt.Sprint(d.Spec.Selector.MatchLabels) != fmt.Sprint(wantSelector) || fmt.Sprint(out.Service.Spec.Selector) != fmt.Sprint(wantSelector) {
		t.Errorf("selectors %v %v", d.Spec.Selector.MatchLabels, out.Service.Spec.Selector)
	}
	if d.Spec.Replicas != nil {
		t.Errorf("replicas %d, want none (the API server's 1, then whoever scales)", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Name != "registry-api" || c.Image != testInput.Image || fmt.Sprint(c.Args) != "[serve --config=/config/config.yaml]" ||
		c.LivenessProbe.HTTPGet.Port.IntValue() != 8081 || c.ReadinessProbe.HTTPGet.Path != "/readiness" {
		t.Errorf("container %+v", c)
	}
	var vols, mounts []string
	for _, v := range pod.Volumes {
		vols = append(vols, v.Name)
	}
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.Name+":"+m.MountPath)
	}
	if fmt.Sprint(vols) != "[registry-server-config data pgpass-secret pgpass]" ||
		fmt.Sprint(mounts) != "[registry-server-config:/config data:/config/registry/production pgpass:/home/appuser/.pgpass]" {
		t.Errorf("volumes %v, mounts %v", vols, mounts)
	}
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "setup-pgpass" ||
		!strings.Contains(pod.InitContainers[0].Command[2], "chmod 0600 /pgpass/.pgpass") || c.Env[0].Name != "PGPASSFILE" {
		t.Errorf("pgpass: init %+v, env %v", pod.InitContainers, c.Env)
	}
	if h := d.Spec.Template.Annotations[naming.AnnotationRegistryConfigHash]; h != wiring.ConfigHash(r.Spec) || len(h) == 0 {
		t.Errorf("config hash %q", h)
	}
	if _, ok := d.Annotations[naming.AnnotationPodTemplateSpecHash]; ok {
		t.Errorf("a template hash without a template: %v", d.Annotations)
	}
}

// TestBuildMergesTheTemplateAsToolHive: the user's container is completed
// by the built one, not replaced; built volumes and mounts are added
// after the user's; a sidecar stays.
func TestBuildMergesTheTemplateAsToolHive(t *testing.T) {
	out, err := Build(newRegistry(func(r *thv1.MCPRegistry) {
		r.Spec.PodTemplateSpec = toolhivetest.Raw(toolhivetest.RegistryFullTemplate)
	}), testInput)
	if err != nil {
		t.Fatal(err)
	}
	pod := out.Deployment.Spec.Template
	c := pod.Spec.Containers[0]
	if len(pod.Spec.Containers) != 2 || c.Name != "registry-api" || pod.Spec.Containers[1].Name != "sidecar" {
		t.Fatalf("containers %+v", pod.Spec.Containers)
	}
	// The user's resources win whole; image, args and probes come from
	// the built container.
	if c.Resources.Limits != nil || c.Image != testInput.Image || c.LivenessProbe == nil || len(c.Args) != 2 {
		t.Errorf("merged container %+v", c)
	}
	if c.VolumeMounts[0].Name != "extra" || c.VolumeMounts[1].Name != "registry-server-config" {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	if pod.Spec.Volumes[0].Name != "extra" || pod.Spec.Volumes[1].Name != "registry-server-config" || pod.Labels["team"] != "platform" {
		t.Errorf("volumes %+v, labels %v", pod.Spec.Volumes, pod.Labels)
	}
	if h := out.Deployment.Annotations[naming.AnnotationPodTemplateSpecHash]; len(h) != 64 {
		t.Errorf("template hash %q", h)
	}
}

// TestBuildRefusesWhatToolHiveRefuses: ToolHive's checks before a build.
func TestBuildRefusesWhatToolHiveRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		mut       func(*thv1.MCPRegistry)
		condition string
	}{
		"reserved volume": {func(r *thv1.MCPRegistry) {
			r.Spec.Volumes = []apiextensionsv1.JSON{raw(`{"name":"registry-server-config","emptyDir":{}}`)}
		}, thv1.ConditionReady},
		"reserved pgpass volume in the template": {func(r *thv1.MCPRegistry) {
			pgpass["set"](r)
			r.Spec.PodTemplateSpec = toolhivetest.Raw(`{"spec":{"volumes":[{"name":"pgpass","emptyDir":{}}]}}`)
		}, thv1.ConditionReady},
		"reserved init container": {func(r *thv1.MCPRegistry) {
			pgpass["set"](r)
			r.Spec.PodTemplateSpec = toolhivetest.Raw(`{"spec":{"initContainers":[{"name":"setup-pgpass","image":"x"}]}}`)
		}, thv1.ConditionReady},
		"mount path": {func(r *thv1.MCPRegistry) {
			r.Spec.VolumeMounts = []apiextensionsv1.JSON{raw(`{"name":"x","mountPath":"/config"}`)}
		}, thv1.ConditionReady},
		// The registry-api container of the template is the one whose
		// mounts are checked, not whichever container comes first.
		"mount path in the template": {func(r *thv1.MCPRegistry) {
			r.Spec.PodTemplateSpec = toolhivetest.Raw(`{"spec":{"containers":[{"name":"registry-api","volumeMounts":[{"name":"x","mountPath":"/config"}]}]}}`)
		}, thv1.ConditionReady},
		"pgpass mount path": {func(r *thv1.MCPRegistry) {
			pgpass["set"](r)
			r.Spec.VolumeMounts = []apiextensionsv1.JSON{raw(`{"name":"x","mountPath":"/home/appuser/.pgpass"}`)}
		}, thv1.ConditionReady},
		"pgpass key": {func(r *thv1.MCPRegistry) {
			r.Spec.PGPassSecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pg"}}
		}, thv1.ConditionReady},
		"template": {func(r *thv1.MCPRegistry) { r.Spec.PodTemplateSpec = toolhivetest.Raw(`{"spec":{"containers":{}}}`) }, thv1.ConditionPodTemplateValid},
		"selector label": {func(r *thv1.MCPRegistry) {
			r.Spec.PodTemplateSpec = toolhivetest.Raw(`{"metadata":{"labels":{"app.kubernetes.io/component":"other"}}}`)
		}, thv1.ConditionPodTemplateValid},
	} {
		_, err := Build(newRegistry(c.mut), testInput)
		var invalid *wiring.InvalidSpecError
		if !errors.As(err, &invalid) || invalid.Condition != c.condition {
			t.Errorf("%s: %v, want an InvalidSpecError of %s", name, err, c.condition)
		}
	}
}
