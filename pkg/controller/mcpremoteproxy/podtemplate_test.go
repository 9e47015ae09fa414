package mcpremoteproxy

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

func withTemplate(raw string) func(*thv1.MCPRemoteProxy) {
	return func(p *thv1.MCPRemoteProxy) { p.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(raw)} }
}

func container(t *testing.T, p *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	t.Fatalf("no container %q in %v", name, p.Containers)
	return nil
}

// The merged pod carries every field of the user's template, and keeps
// what hivekeeper built where the template says nothing: ToolHive's
// strategic merge of the template onto the built pod.
func TestPodTemplateIsMergedIntoTheProxyPod(t *testing.T) {
	p := newProxy("remote", withTemplate(realisticPodTemplate), func(p *thv1.MCPRemoteProxy) {
		p.Spec.Resources = thv1.ResourceRequirements{Limits: thv1.ResourceList{CPU: "1", Memory: "128Mi"}}
		p.Spec.ResourceOverrides = overrides["deployment-only"]
	})
	d, err := build(inputs{Proxy: p, RunnerImage: "runner:test"})
	if err != nil {
		t.Fatal(err)
	}
	dep := d.Deployment
	tpl := &dep.Spec.Template
	ps := &tpl.Spec

	if tpl.Labels["team"] != "payments" || tpl.Labels[naming.LabelApp] != app {
		t.Errorf("template labels %v", tpl.Labels)
	}
	if tpl.Annotations["prometheus.io/scrape"] != "true" || tpl.Annotations[naming.AnnotationRunConfigChecksum] == "" {
		t.Errorf("template annotations %v", tpl.Annotations)
	}
	if dep.Annotations[naming.AnnotationPodTemplateSpecHash] == "" || dep.Annotations["owner"] != "platform" {
		t.Errorf("deployment annotations %v", dep.Annotations)
	}
	if ps.NodeSelector["pool"] != "mcp" || len(ps.Tolerations) != 2 || ps.Affinity == nil || ps.Affinity.PodAntiAffinity == nil {
		t.Errorf("scheduling: %v %v %v", ps.NodeSelector, ps.Tolerations, ps.Affinity)
	}
	if ps.PriorityClassName != "mcp-critical" || ptr.Deref(ps.TerminationGracePeriodSeconds, 0) != 45 || len(ps.TopologySpreadConstraints) != 1 {
		t.Errorf("pod fields: %q %v %v", ps.PriorityClassName, ps.TerminationGracePeriodSeconds, ps.TopologySpreadConstraints)
	}
	// Pod security context: the user's values over the restricted ones,
	// which stay where the user says nothing.
	if sc := ps.SecurityContext; ptr.Deref(sc.RunAsUser, 0) != 2000 || ptr.Deref(sc.FSGroup, 0) != 2000 ||
		!ptr.Deref(sc.RunAsNonRoot, false) || len(sc.SupplementalGroups) != 1 {
		t.Errorf("pod security context %+v", sc)
	}
	// Pull secrets merge by name.
	if got := ps.ImagePullSecrets; !slices.Equal(got, []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "corp-registry"}}) &&
		!slices.Equal(got, []corev1.LocalObjectReference{{Name: "corp-registry"}, {Name: "regcred"}}) {
		t.Errorf("image pull secrets %v", got)
	}
	var vols []string
	for _, v := range ps.Volumes {
		vols = append(vols, v.Name)
	}
	for _, want := range []string{workload.RunConfigVolume, workload.TmpVolume, "corp-ca", "cache", "host-certs", "podinfo"} {
		if !slices.Contains(vols, want) {
			t.Errorf("volume %q missing from %v", want, vols)
		}
	}
	if len(ps.InitContainers) != 1 || ps.InitContainers[0].Name != "wait" {
		t.Errorf("init containers %v", ps.InitContainers)
	}
	if len(ps.Containers) != 2 {
		t.Fatalf("containers %v", ps.Containers)
	}
	c := container(t, ps, naming.ProxyContainerName)
	// What hivekeeper built stays.
	if c.Image != "runner:test" || c.Args[0] != "run" || c.LivenessProbe == nil || c.Ports[0].Name != workload.ProxyPortName {
		t.Errorf("built fields lost: %+v", c)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, name := range []string{"SSL_CERT_DIR", "POD_NAME", "POD_IP", "HTTP_PROXY", "TOOLHIVE_RUNTIME"} {
		if _, ok := env[name]; !ok {
			t.Errorf("env %s missing: %v", name, c.Env)
		}
	}
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	for _, want := range []string{workload.RunConfigMountPath, "/tmp", "/etc/corp-ca", "/var/cache/mcp"} {
		if !slices.Contains(mounts, want) {
			t.Errorf("mount %s missing from %v", want, mounts)
		}
	}
	// Resources: the user's requests next to the spec's limits.
	if !c.Resources.Requests.Cpu().Equal(resource.MustParse("100m")) || !c.Resources.Limits.Cpu().Equal(resource.MustParse("1")) {
		t.Errorf("resources %+v", c.Resources)
	}
	if sc := c.SecurityContext; ptr.Deref(sc.RunAsUser, 0) != 2000 || ptr.Deref(sc.ReadOnlyRootFilesystem, false) != true {
		t.Errorf("container security context %+v", sc)
	}
	if c.ReadinessProbe.InitialDelaySeconds != 2 || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != workload.HealthPath {
		t.Errorf("readiness probe %+v", c.ReadinessProbe)
	}
	if sc := container(t, ps, "log-shipper"); sc.Image != "fluent/fluent-bit:3.0" {
		t.Errorf("sidecar %+v", sc)
	}
}

// A template converges, is reported valid, and then costs nothing; an
// edit rolls the Deployment once; removing the template removes what it
// added (sent as null) and its hash, once.
func TestPodTemplateRollsOnceAndIsRemovedCleanly(t *testing.T) {
	f := newFixture(t, newProxy("remote", withTemplate(realisticPodTemplate)))
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create serviceaccounts", "create rolebindings",
		"create configmaps", "create services", "create deployments", "patch mcpremoteproxies/status")
	c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionPodTemplateValid)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != thv1.ReasonPodTemplateValid {
		t.Errorf("PodTemplateValid = %+v", c)
	}
	f.converge("remote")
	for range 2 {
		f.ApplyServerBehaviour()
		f.Refresh()
		acts, _ = f.sync("remote")
		wt.AssertActions(t, acts)
	}

	// An edit: one Deployment patch, then nothing.
	edited := strings.Replace(realisticPodTemplate, `"pool": "mcp"`, `"pool": "mcp-large"`, 1)
	f.update("remote", withTemplate(edited))
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts, "patch deployments")
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts)
	if got := f.deployment("remote").Spec.Template.Spec.NodeSelector["pool"]; got != "mcp-large" {
		t.Errorf("nodeSelector pool = %q after the edit", got)
	}

	// A live edit of a scheduling field is put back, as ToolHive does.
	live := f.deployment("remote")
	live.Spec.Template.Spec.Tolerations = nil
	if _, err := f.Kube.AppsV1().Deployments(testNS).Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts, "patch deployments")
	f.Refresh()
	if got := f.deployment("remote").Spec.Template.Spec.Tolerations; len(got) != 2 {
		t.Errorf("tolerations not restored: %v", got)
	}

	// The template removed: one patch, which takes away what only the
	// template set and the hash, then nothing.
	f.update("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.PodTemplateSpec = nil })
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts, "patch deployments", "patch mcpremoteproxies/status")
	if c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionPodTemplateValid); c != nil {
		t.Errorf("PodTemplateValid kept without a template: %+v", c)
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts)
	dep := f.deployment("remote")
	ps := dep.Spec.Template.Spec
	if _, ok := dep.Annotations[naming.AnnotationPodTemplateSpecHash]; ok {
		t.Error("hash annotation kept without a template")
	}
	if len(ps.NodeSelector) != 0 || len(ps.Tolerations) != 0 || ps.Affinity != nil || ps.PriorityClassName != "" ||
		len(ps.InitContainers) != 0 || len(ps.Containers) != 1 || len(ps.TopologySpreadConstraints) != 0 {
		t.Errorf("template fields left behind: %+v", ps)
	}
	if got := ptr.Deref(ps.SecurityContext.RunAsUser, 0); got != wiring.RunnerUID {
		t.Errorf("pod runAsUser = %d, want the restricted default back", got)
	}
}

// A template no pod can be built from: PodTemplateValid=False, Ready=False,
// one Warning event, and nothing created; an existing Deployment is left
// exactly as it is.
func TestInvalidPodTemplateBlocksTheDeployment(t *testing.T) {
	invalid := map[string]string{
		"wrong type":          `{"spec":{"containers":"toolhive"}}`,
		"selector label":      `{"metadata":{"labels":{"app":"other"}}}`,
		"not an object value": `{"spec":{"nodeSelector":["a"]}}`,
	}
	for name, raw := range invalid {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, newProxy("remote", withTemplate(raw)))
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
			assertTemplateInvalid(t, f)

			// A working proxy whose template is edited into an invalid one
			// keeps running as it was.
			f = newFixture(t, newProxy("remote", withTemplate(`{"spec":{"nodeSelector":{"pool":"mcp"}}}`)))
			f.converge("remote")
			before := f.deployment("remote")
			f.update("remote", withTemplate(raw))
			acts, _ = f.sync("remote")
			wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
			assertTemplateInvalid(t, f)
			if after := f.deployment("remote"); after.ResourceVersion != before.ResourceVersion {
				t.Error("the Deployment was written")
			}
			f.Refresh()
			acts, _ = f.sync("remote")
			wt.AssertActions(t, acts)
		})
	}
}

func assertTemplateInvalid(t *testing.T, f *fixture) {
	t.Helper()
	conds := f.get("remote").Status.Conditions
	c := meta.FindStatusCondition(conds, thv1.ConditionPodTemplateValid)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonPodTemplateInvalid || !strings.HasPrefix(c.Message, "spec.podTemplateSpec: ") {
		t.Errorf("PodTemplateValid = %+v", c)
	}
	if r := meta.FindStatusCondition(conds, thv1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", r)
	}
	if p := f.get("remote").Status.Phase; p != thv1.MCPRemoteProxyPhaseFailed {
		t.Errorf("phase %q", p)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonPodTemplateInvalid) {
		t.Errorf("events %q, want one Warning", evs)
	}
}

// A template may not hand the pod another workload's account, any more
// than spec.serviceAccount may; this proxy's own runner account is fine.
func TestPodTemplateServiceAccountIsChecked(t *testing.T) {
	f := newFixture(t, newProxy("remote", withTemplate(`{"spec":{"serviceAccountName":"fetch-proxy-runner"}}`)),
		wt.ManagedServiceAccount(testNS, "fetch-proxy-runner", thv1.KindMCPServer, "fetch"))
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionReady)
	if c == nil || c.Reason != thv1.ReasonServiceAccountNotAllowed || !strings.HasPrefix(c.Message, "spec.podTemplateSpec.spec.serviceAccountName: ") {
		t.Errorf("Ready = %+v", c)
	}

	f = newFixture(t, newProxy("remote", withTemplate(`{"spec":{"serviceAccountName":"mine"}}`)))
	f.converge("remote")
	if sa := f.deployment("remote").Spec.Template.Spec.ServiceAccountName; sa != "mine" {
		t.Errorf("serviceAccountName = %q, want the template's (ToolHive's merge)", sa)
	}
}
