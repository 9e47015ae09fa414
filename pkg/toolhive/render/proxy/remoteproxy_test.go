package proxy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// The merged pod carries every field of the user's template, and keeps
// what hivekeeper built where the template says nothing: ToolHive's
// strategic merge of the template onto the built pod.
func withTemplate(raw string) func(*thv1.MCPRemoteProxy) {
	return func(p *thv1.MCPRemoteProxy) { p.Spec.PodTemplateSpec = toolhivetest.Raw(raw) }
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

func TestPodTemplateIsMergedIntoTheProxyPod(t *testing.T) {
	p := newProxy("remote", withTemplate(toolhivetest.RealisticProxyPodTemplate), func(p *thv1.MCPRemoteProxy) {
		p.Spec.Resources = thv1.ResourceRequirements{Limits: thv1.ResourceList{CPU: "1", Memory: "128Mi"}}
		p.Spec.ResourceOverrides = toolhivetest.RemoteProxyOverrides["deployment-only"]
	})
	d, err := BuildRemoteProxy(p, Input{RunnerImage: "runner:test"})
	if err != nil {
		t.Fatal(err)
	}
	dep := d.Deployment
	tpl := &dep.Spec.Template
	ps := &tpl.Spec

	if tpl.Labels["team"] != "payments" || tpl.Labels[naming.LabelApp] != naming.AppMCPRemoteProxy {
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
	for _, want := range []string{runConfigVolume, "corp-ca", "cache", "host-certs", "podinfo"} {
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
	if c.Image != "runner:test" || c.Args[0] != "run" || c.LivenessProbe == nil || c.Ports[0].Name != proxyPortName {
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
	for _, want := range []string{runConfigMountPath, "/etc/corp-ca", "/var/cache/mcp"} {
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
	if c.ReadinessProbe.InitialDelaySeconds != 2 || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != healthPath {
		t.Errorf("readiness probe %+v", c.ReadinessProbe)
	}
	if sc := container(t, ps, "log-shipper"); sc.Image != "fluent/fluent-bit:3.0" {
		t.Errorf("sidecar %+v", sc)
	}
}

// Audit off and memory sessions are the same as neither: nothing in the
// RunConfig, no env.
func TestAuditOffAndMemorySessionsWriteNothing(t *testing.T) {
	plain, err := BuildRemoteProxy(newProxy("remote"), Input{RunnerImage: "r"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := BuildRemoteProxy(newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.Audit = &thv1.AuditConfig{}
		p.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderMemory,
			PasswordRef: &thv1.SecretKeyRef{Name: "unused", Key: "k"}}
	}), Input{RunnerImage: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if d.RunConfig.Data[schema.Key] != plain.RunConfig.Data[schema.Key] {
		t.Errorf("RunConfig\n%s\nwant\n%s", d.RunConfig.Data[schema.Key], plain.RunConfig.Data[schema.Key])
	}
	if got := drift.DiffDeployment(plain.Deployment, d.Deployment); len(got) != 0 {
		t.Errorf("the Deployment differs: %v", got)
	}
}
