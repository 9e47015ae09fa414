package embedding

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/drift/drifttest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

const testNS = "team-a"

func newServer(mut ...func(*thv1.EmbeddingServer)) *thv1.EmbeddingServer {
	return toolhivetest.NewEmbeddingServer(testNS, "embed", mut...)
}

// option dimensions of the parity table.
var (
	caches = map[string]func(*thv1.EmbeddingServer){
		"none": func(*thv1.EmbeddingServer) {},
		"off":  func(e *thv1.EmbeddingServer) { e.Spec.ModelCache = &thv1.ModelCacheConfig{Enabled: false, Size: "5Gi"} },
		"on":   toolhivetest.WithModelCache("20Gi"),
		"class": func(e *thv1.EmbeddingServer) {
			toolhivetest.WithModelCache("1Ti")(e)
			e.Spec.ModelCache.StorageClassName = ptr.To("fast")
		},
	}
	templates = map[string]string{"none": "", "full": toolhivetest.EmbeddingFullTemplate}
	extras    = map[string]func(*thv1.EmbeddingServer){
		"none": func(*thv1.EmbeddingServer) {},
		"token-args-env": func(e *thv1.EmbeddingServer) {
			e.Spec.HFTokenSecretRef = &thv1.SecretKeyRef{Name: "hf", Key: "token"}
			e.Spec.Args = []string{"--max-batch-tokens", "32768"}
			e.Spec.Env = []thv1.NameValue{{Name: "RUST_LOG", Value: "info"}}
		},
		"resources": func(e *thv1.EmbeddingServer) {
			e.Spec.Resources = thv1.ResourceRequirements{Limits: thv1.ResourceList{CPU: "4000m", Memory: "8Gi"}, Requests: thv1.ResourceList{CPU: "2"}}
		},
		"overrides": func(e *thv1.EmbeddingServer) {
			e.Spec.ResourceOverrides = &thv1.EmbeddingResourceOverrides{
				StatefulSet: &thv1.EmbeddingStatefulSetOverrides{
					ResourceMetadataOverrides:    thv1.ResourceMetadataOverrides{Labels: map[string]string{"tier": "ml"}, Annotations: map[string]string{"a": "b"}},
					PodTemplateMetadataOverrides: &thv1.ResourceMetadataOverrides{Labels: map[string]string{"app.custom": "ml"}, Annotations: map[string]string{"c": "d"}},
				},
				Service:               &thv1.ResourceMetadataOverrides{Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}},
				PersistentVolumeClaim: &thv1.ResourceMetadataOverrides{Labels: map[string]string{"backup": "no"}, Annotations: map[string]string{"e": "f"}},
			}
		},
		"port-replicas-pull": func(e *thv1.EmbeddingServer) {
			e.Spec.Port, e.Spec.Replicas, e.Spec.ImagePullPolicy = 9090, ptr.To[int32](3), "Always"
		},
	}
)

// TestBuildDriftParity is invariant 3: for every option combination the
// built children, fed back as live after a JSON round trip and the API
// server's defaults, show no drift and need no recreation.
func TestBuildDriftParity(t *testing.T) {
	n := 0
	for cName, cache := range caches {
		for tName, tpl := range templates {
			for xName, extra := range extras {
				name := fmt.Sprintf("cache-%s/template-%s/%s", cName, tName, xName)
				n++
				e := newServer(cache, extra, func(e *thv1.EmbeddingServer) {
					if tpl != "" {
						e.Spec.PodTemplateSpec = toolhivetest.Raw(tpl)
					}
				})
				out, err := Build(e, nil, nil)
				if err != nil {
					t.Fatalf("%s: build: %v", name, err)
				}
				sts := drifttest.RoundTrip(out.StatefulSet)
				drifttest.DefaultStatefulSet(sts)
				svc := drifttest.RoundTrip(out.Service)
				drifttest.DefaultService(svc)
				for child, fields := range map[string][]string{
					"statefulset":     drift.DiffStatefulSet(out.StatefulSet, sts),
					"statefulset-raw": drift.DiffStatefulSet(out.StatefulSet, out.StatefulSet),
					"service":         drift.DiffService(out.Service, svc),
				} {
					if len(fields) != 0 {
						t.Errorf("%s: %s drifted right after build: %v", name, child, fields)
					}
				}
				if drift.StatefulSetNeedsRecreate(out.StatefulSet, sts) {
					t.Errorf("%s: immutable field drift right after build", name)
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

// TestBuildStatefulSet pins what ToolHive's operator writes for a server
// with a cache, a token, arguments and environment: the container's
// arguments and environment in ToolHive's order, its probes, the claim
// template and the labels.
func TestBuildStatefulSet(t *testing.T) {
	e := newServer(toolhivetest.WithModelCache("20Gi"), extras["token-args-env"])
	out, err := Build(e, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sts := out.StatefulSet
	if sts.Name != "embed" || sts.Spec.ServiceName != "embed" || *sts.Spec.Replicas != 1 {
		t.Errorf("name %q, serviceName %q, replicas %d", sts.Name, sts.Spec.ServiceName, *sts.Spec.Replicas)
	}
	wantLabels := map[string]string{"app.kubernetes.io/name": "embeddingserver", "app.kubernetes.io/instance": "embed",
		"app.kubernetes.io/component": "embedding-server", "app.kubernetes.io/managed-by": "toolhive-operator"}
	for what, got := range map[string]map[string]string{"labels": sts.Labels, "selector": sts.Spec.Selector.MatchLabels,
		"template": sts.Spec.Template.Labels, "service": out.Service.Labels, "service selector": out.Service.Spec.Selector} {
		if !equalMaps(got, wantLabels) {
			t.Errorf("%s = %v, want %v", what, got, wantLabels)
		}
	}
	c := sts.Spec.Template.Spec.Containers[0]
	wantArgs := []string{"--model-id", "BAAI/bge-small-en-v1.5", "--port", "8080", "--max-batch-tokens", "32768"}
	if fmt.Sprint(c.Args) != fmt.Sprint(wantArgs) {
		t.Errorf("args = %v, want %v", c.Args, wantArgs)
	}
	var names []string
	for _, v := range c.Env {
		names = append(names, v.Name)
	}
	if fmt.Sprint(names) != "[MODEL_ID HF_TOKEN RUST_LOG HF_HOME]" {
		t.Errorf("env = %v", names)
	}
	if r := c.Env[1].ValueFrom.SecretKeyRef; r.Name != "hf" || r.Key != "token" {
		t.Errorf("HF_TOKEN from %v", r)
	}
	if c.Env[3].Value != "/data" || c.VolumeMounts[0].Name != "model-cache" || c.VolumeMounts[0].MountPath != "/data" {
		t.Errorf("cache env %v, mounts %v", c.Env[3], c.VolumeMounts)
	}
	if c.Name != "embedding" || c.ImagePullPolicy != corev1.PullIfNotPresent || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("container %s, pull %s, ports %v", c.Name, c.ImagePullPolicy, c.Ports)
	}
	for _, p := range []struct {
		probe                          *corev1.Probe
		delay, period, timeout, failed int32
	}{{c.LivenessProbe, 60, 30, 10, 3}, {c.ReadinessProbe, 30, 10, 5, 3}} {
		if p.probe.HTTPGet.Path != "/health" || p.probe.HTTPGet.Port != intstr.FromInt32(8080) ||
			p.probe.InitialDelaySeconds != p.delay || p.probe.PeriodSeconds != p.period || p.probe.TimeoutSeconds != p.timeout || p.probe.FailureThreshold != p.failed {
			t.Errorf("probe %+v", p.probe)
		}
	}
	vct := sts.Spec.VolumeClaimTemplates
	if len(vct) != 1 || vct[0].Name != "model-cache" || vct[0].Spec.AccessModes[0] != corev1.ReadWriteOnce ||
		!vct[0].Spec.Resources.Requests[corev1.ResourceStorage].Equal(resource.MustParse("20Gi")) || !equalMaps(vct[0].Labels, wantLabels) {
		t.Errorf("volume claim templates %+v", vct)
	}
	if p := out.Service.Spec.Ports[0]; p.Name != "http" || p.Port != 8080 || p.TargetPort != intstr.FromInt32(8080) || p.Protocol != corev1.ProtocolTCP {
		t.Errorf("service port %+v", p)
	}
	if ref := sts.OwnerReferences[0]; ref.Kind != thv1.KindEmbeddingServer || ref.Name != "embed" || !*ref.Controller {
		t.Errorf("owner %+v", ref)
	}
}

// TestBuildOverridesKeepTheSelector: overrides add labels but never
// replace the ones the StatefulSet selects its pods by, and a template
// that would is refused. The pod's override labels are also the
// StatefulSet's selector and labels, as ToolHive's operator writes them.
func TestBuildOverridesKeepTheSelector(t *testing.T) {
	out, err := Build(newServer(func(e *thv1.EmbeddingServer) {
		e.Spec.ResourceOverrides = &thv1.EmbeddingResourceOverrides{StatefulSet: &thv1.EmbeddingStatefulSetOverrides{
			ResourceMetadataOverrides:    thv1.ResourceMetadataOverrides{Labels: map[string]string{naming.LabelName: "x", "extra": "y"}},
			PodTemplateMetadataOverrides: &thv1.ResourceMetadataOverrides{Labels: map[string]string{naming.LabelInstance: "x", "pod": "p"}},
		}}
	}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.StatefulSet.Labels[naming.LabelName] != "embeddingserver" || out.StatefulSet.Labels["extra"] != "y" ||
		out.StatefulSet.Spec.Template.Labels[naming.LabelInstance] != "embed" ||
		out.StatefulSet.Spec.Selector.MatchLabels["pod"] != "p" || out.StatefulSet.Labels["pod"] != "p" {
		t.Errorf("labels %v, template %v, selector %v", out.StatefulSet.Labels, out.StatefulSet.Spec.Template.Labels, out.StatefulSet.Spec.Selector.MatchLabels)
	}
	_, err = Build(newServer(func(e *thv1.EmbeddingServer) {
		e.Spec.PodTemplateSpec = toolhivetest.Raw(`{"metadata":{"labels":{"app.kubernetes.io/instance":"x"}}}`)
	}), nil, nil)
	var invalid *wiring.InvalidSpecError
	if !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionPodTemplateValid {
		t.Errorf("selector label in the template: %v", err)
	}
}

// TestBuildRefusesWhatNoChildCanCarry: quantities that do not parse and
// a template that is not a pod template are refused, naming the field.
func TestBuildRefusesWhatNoChildCanCarry(t *testing.T) {
	for name, mut := range map[string]func(*thv1.EmbeddingServer){
		"cache size": func(e *thv1.EmbeddingServer) { toolhivetest.WithModelCache("lots")(e) },
		"cpu":        func(e *thv1.EmbeddingServer) { e.Spec.Resources.Limits.CPU = "fast" },
		"template": func(e *thv1.EmbeddingServer) {
			e.Spec.PodTemplateSpec = toolhivetest.Raw(`{"spec":{"containers":"no"}}`)
		},
	} {
		var invalid *wiring.InvalidSpecError
		if _, err := Build(newServer(mut), nil, nil); !errors.As(err, &invalid) {
			t.Errorf("%s: %v, want an InvalidSpecError", name, err)
		}
	}
}

func equalMaps(a, b map[string]string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
