package drift

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/hivekeeper/hivekeeper/pkg/drift/drifttest"
)

var childLabels = map[string]string{"app.kubernetes.io/name": "mcpserver", "app.kubernetes.io/instance": "fetch"}

func childMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "team-a", Name: name, Labels: maps.Clone(childLabels), Annotations: map[string]string{"toolhive.stacklok.dev/owned": "yes"}}
}

// bareService is a Service as the EmbeddingServer and MCPRegistry builders
// write it: type, session affinity and the port's protocol left to the
// server.
func bareService() *corev1.Service {
	return &corev1.Service{ObjectMeta: childMeta("fetch"), Spec: corev1.ServiceSpec{
		Selector: maps.Clone(childLabels),
		Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
	}}
}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(childLabels), Annotations: map[string]string{"toolhive.stacklok.dev/config-hash": "abc"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "fetch-proxy-runner",
			SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			Volumes:            everyVolumeKind(),
			Containers: []corev1.Container{{
				Name: "toolhive", Image: "runner:v1", Args: []string{"run"},
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Env:            []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/runconfig"}},
			}},
		},
	}
}

// A child as the API server returns it, its defaults filled in and other
// writers' labels and annotations added, is not drift, whatever its kind:
// a comparator that read a defaulted field raw, or metadata exactly, would
// patch the child on every sync.
func TestLiveChildIsNotDrift(t *testing.T) {
	for _, tc := range []struct {
		kind string
		diff func() []string
	}{
		{"ConfigMap", func() []string {
			want := &corev1.ConfigMap{ObjectMeta: childMeta("fetch-runconfig"), Data: map[string]string{"runconfig.json": "{}"}}
			have := drifttest.RoundTrip(want)
			drifttest.AddForeignMarks(have)
			return DiffConfigMap(want, have)
		}},
		{"ServiceAccount", func() []string {
			want := &corev1.ServiceAccount{ObjectMeta: childMeta("fetch-proxy-runner"), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}}
			have := drifttest.RoundTrip(want)
			drifttest.AddForeignMarks(have)
			return append(DiffServiceAccount(want, have), DiffServiceAccountWithPullSecrets(want, have)...)
		}},
		{"RoleBinding", func() []string {
			want := &rbacv1.RoleBinding{ObjectMeta: childMeta("fetch-proxy-runner"),
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "fetch-proxy-runner", Namespace: "team-a"}},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "toolhive-proxy-runner"}}
			have := drifttest.RoundTrip(want)
			drifttest.AddForeignMarks(have)
			return DiffRoleBinding(want, have)
		}},
		{"Role", func() []string {
			want := &rbacv1.Role{ObjectMeta: childMeta("fetch"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}}
			have := drifttest.RoundTrip(want)
			drifttest.AddForeignMarks(have)
			return DiffRole(want, have)
		}},
		{"Service with server defaults", func() []string {
			want := bareService()
			have := drifttest.RoundTrip(want)
			drifttest.DefaultService(have)
			drifttest.AddForeignMarks(have)
			return DiffService(want, have)
		}},
		{"NodePort Service with client IP affinity", func() []string {
			want := bareService()
			want.Spec.Type = corev1.ServiceTypeNodePort
			want.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			have := drifttest.RoundTrip(want)
			drifttest.DefaultService(have)
			drifttest.AddForeignMarks(have)
			return DiffService(want, have)
		}},
		{"Deployment", func() []string {
			want := &appsv1.Deployment{ObjectMeta: childMeta("fetch"), Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(childLabels)}, Template: podTemplate()}}
			have := drifttest.RoundTrip(want)
			drifttest.DefaultDeployment(have)
			drifttest.AddForeignMarks(have)
			drifttest.AddForeignMarks(&have.Spec.Template)
			return append(DiffDeployment(want, have), DiffDeploymentWholePod(want, have)...)
		}},
		{"StatefulSet", func() []string {
			want := &appsv1.StatefulSet{ObjectMeta: childMeta("embed"), Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](2), ServiceName: "embed", Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(childLabels)}, Template: podTemplate()}}
			want.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			have := drifttest.RoundTrip(want)
			drifttest.DefaultStatefulSet(have)
			drifttest.AddForeignMarks(have)
			drifttest.AddForeignMarks(&have.Spec.Template)
			return DiffStatefulSet(want, have)
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if d := tc.diff(); len(d) != 0 {
				t.Errorf("drift %v, want none", d)
			}
		})
	}
}

// Each field hivekeeper sets on a Service is compared, and reported under
// its own name; what the server allocates (IPs, node ports) is not.
func TestDiffServiceReportsEachField(t *testing.T) {
	live := func() *corev1.Service {
		s := drifttest.RoundTrip(bareService())
		drifttest.DefaultService(s)
		drifttest.AddForeignMarks(s)
		return s
	}
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Service)
		want []string
	}{
		{"label changed", func(s *corev1.Service) { s.Labels["app.kubernetes.io/instance"] = "other" }, []string{FieldLabels}},
		{"label removed", func(s *corev1.Service) { delete(s.Labels, "app.kubernetes.io/name") }, []string{FieldLabels}},
		{"annotation changed", func(s *corev1.Service) { s.Annotations["toolhive.stacklok.dev/owned"] = "no" }, []string{FieldAnnotations}},
		{"type", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, []string{FieldServiceType}},
		{"port", func(s *corev1.Service) { s.Spec.Ports[0].Port = 9090 }, []string{FieldServicePorts}},
		{"target port", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") }, []string{FieldServicePorts}},
		{"protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolUDP }, []string{FieldServicePorts}},
		{"port name", func(s *corev1.Service) { s.Spec.Ports[0].Name = "web" }, []string{FieldServicePorts}},
		{"selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "other"} }, []string{FieldServiceSelector}},
		{"session affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, []string{FieldSessionAffinity}},
		{"allocated node port", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 31000 }, nil},
		{"cluster IP", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.99" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := live()
			tc.mut(have)
			if got := DiffService(bareService(), have); !slices.Equal(got, tc.want) {
				t.Errorf("DiffService = %v, want %v", got, tc.want)
			}
		})
	}
	// A desired type or affinity that is the server's default matches a
	// live Service that left it empty, and the other way round.
	want := bareService()
	want.Spec.Type, want.Spec.SessionAffinity = corev1.ServiceTypeClusterIP, corev1.ServiceAffinityNone
	want.Spec.Ports[0].Protocol = corev1.ProtocolTCP
	if got := DiffService(want, bareService()); len(got) != 0 {
		t.Errorf("explicit defaults against empty fields: %v, want none", got)
	}
}

// everyVolumeKind has one volume of each source the API server defaults,
// none of its defaults set.
func everyVolumeKind() []corev1.Volume {
	fieldRef := &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}
	return []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "fetch-runconfig"}}}},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
		{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vmcp"}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: fieldRef.DeepCopy()}}}},
		}}}},
		{Name: "downward", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: fieldRef.DeepCopy()}}}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}},
	}
}

// A value hivekeeper sets where the server has a default is compared, not
// overwritten by the default: a mode of 0400 differs from the live 0644,
// an explicit token expiry from the default hour, a host path type from
// the unset one. The pod's security context is compared when hivekeeper
// sets one, and left to others (the server, admission) when it does not.
func TestDiffPodSpecComparesSetValues(t *testing.T) {
	live := func() *corev1.PodSpec {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: podTemplate()}}
		d = drifttest.RoundTrip(d)
		drifttest.DefaultDeployment(d)
		return &d.Spec.Template.Spec
	}
	set := func(mut func(*corev1.PodSpec)) *corev1.PodSpec {
		p := podTemplate().Spec
		mut(&p)
		return &p
	}
	for _, tc := range []struct {
		name string
		want *corev1.PodSpec
		have *corev1.PodSpec
		diff []string
	}{
		{"defaults", set(func(*corev1.PodSpec) {}), live(), nil},
		{"secret mode", set(func(p *corev1.PodSpec) { p.Volumes[1].Secret.DefaultMode = ptr.To[int32](0o400) }), live(), []string{FieldVolumes}},
		{"projected mode", set(func(p *corev1.PodSpec) { p.Volumes[2].Projected.DefaultMode = ptr.To[int32](0o400) }), live(), []string{FieldVolumes}},
		{"token expiry", set(func(p *corev1.PodSpec) {
			p.Volumes[2].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds = ptr.To[int64](600)
		}), live(), []string{FieldVolumes}},
		{"downward API mode", set(func(p *corev1.PodSpec) { p.Volumes[3].DownwardAPI.DefaultMode = ptr.To[int32](0o400) }), live(), []string{FieldVolumes}},
		{"host path type", set(func(p *corev1.PodSpec) {
			p.Volumes[4].HostPath.Type = ptr.To(corev1.HostPathDirectory)
		}), live(), []string{FieldVolumes}},
		{"security context", set(func(p *corev1.PodSpec) { p.SecurityContext.RunAsUser = ptr.To[int64](1000) }), live(), []string{FieldPodSecurityContext}},
		{"no security context", set(func(p *corev1.PodSpec) { p.SecurityContext = nil }), live(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DiffPodSpec(tc.want, tc.have); !slices.Equal(got, tc.diff) {
				t.Errorf("DiffPodSpec = %v, want %v", got, tc.diff)
			}
		})
	}
}

// The fields DiffStatefulSet and the ServiceAccount comparators report
// when they differ, and what they leave to others: the live pull policy
// when hivekeeper sets none, an account's pull secrets when it sets none
// (OpenShift adds its own).
func TestDiffStatefulSetAndAccountFields(t *testing.T) {
	sts := func() *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: childMeta("embed"), Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: "embed", Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(childLabels)}, Template: podTemplate()}}
		s.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
		return s
	}
	live := func(mut func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
		s := drifttest.RoundTrip(sts())
		drifttest.DefaultStatefulSet(s)
		mut(s)
		return s
	}
	noPolicy := sts()
	noPolicy.Spec.Template.Spec.Containers[0].ImagePullPolicy = ""
	for _, tc := range []struct {
		name       string
		want, have *appsv1.StatefulSet
		diff       []string
	}{
		{"replicas", sts(), live(func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](5) }), []string{FieldReplicas}},
		{"pull policy", sts(), live(func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways }),
			[]string{FieldImagePullPolicy}},
		{"pull policy left to the server", noPolicy, live(func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways }), nil},
		{"container port protocol", sts(), live(func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP }),
			[]string{FieldContainerPorts}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DiffStatefulSet(tc.want, tc.have); !slices.Equal(got, tc.diff) {
				t.Errorf("DiffStatefulSet = %v, want %v", got, tc.diff)
			}
		})
	}

	account := func(secrets ...string) *corev1.ServiceAccount {
		sa := &corev1.ServiceAccount{ObjectMeta: childMeta("reg-registry-api")}
		for _, s := range secrets {
			sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
		return sa
	}
	for _, tc := range []struct {
		name              string
		want, have        *corev1.ServiceAccount
		diff, withSecrets []string
	}{
		{"pull secrets differ", account("a"), account("b"), []string{FieldImagePullSecrets}, []string{FieldImagePullSecrets, FieldServiceAccountPullSecrets}},
		{"none set, others added", account(), account("openshift-dockercfg"), nil, nil},
		{"same", account("a", "b"), account("a", "b"), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DiffServiceAccount(tc.want, tc.have); !slices.Equal(got, tc.diff) {
				t.Errorf("DiffServiceAccount = %v, want %v", got, tc.diff)
			}
			if got := DiffServiceAccountWithPullSecrets(tc.want, tc.have); !slices.Equal(got, tc.withSecrets) {
				t.Errorf("DiffServiceAccountWithPullSecrets = %v, want %v", got, tc.withSecrets)
			}
		})
	}
}
