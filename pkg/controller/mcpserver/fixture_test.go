package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

const testNS = "team-a"

var testNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fixture is the classic controller test fixture: fake clientsets, informer
// indexers seeded directly (informers never run), one sync at a time, and
// assertions on the exact actions the sync sent.
type fixture struct {
	t        *testing.T
	kube     *k8sfake.Clientset
	th       *thfake.Clientset
	kubeInf  kubeinformers.SharedInformerFactory
	thInf    informers.SharedInformerFactory
	recorder *record.FakeRecorder
	c        *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	var kubeObjs, thObjs []runtime.Object
	for _, o := range objs {
		if strings.Contains(o.GetObjectKind().GroupVersionKind().Group, "toolhive") || isToolhive(o) {
			thObjs = append(thObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{t: t, recorder: record.NewFakeRecorder(100)}
	f.kube = k8sfake.NewClientset(kubeObjs...)
	f.th = thfake.NewSimpleClientset(thObjs...)
	f.kubeInf = kubeinformers.NewSharedInformerFactory(f.kube, 0)
	f.thInf = informers.NewSharedInformerFactory(f.th, 0)
	if err := index.AddToInformers(f.thInf); err != nil {
		t.Fatal(err)
	}
	c, err := New(&app.Deps{
		Kube: f.kube, Toolhive: f.th, KubeInformers: f.kubeInf, ToolhiveInformers: f.thInf,
		Recorder: f.recorder, Options: app.Options{RunnerImage: "runner:test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.clock = clocktesting.NewFakePassiveClock(testNow)
	f.c = c
	f.refresh()
	return f
}

func isToolhive(o runtime.Object) bool {
	switch o.(type) {
	case *thv1.MCPServer, *thv1.MCPOIDCConfig, *thv1.MCPGroup, *thv1.MCPRemoteProxy, *thv1.VirtualMCPServer:
		return true
	}
	return false
}

// refresh copies what the fake API server holds into the informer
// indexers, as watch events would, and forgets the actions so far.
func (f *fixture) refresh() {
	f.t.Helper()
	ctx := context.Background()
	replace := func(inf cache.SharedIndexInformer, list runtime.Object, err error) {
		if err != nil {
			f.t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			f.t.Fatal(err)
		}
		objs := make([]any, len(items))
		for i := range items {
			objs[i] = items[i]
		}
		if err := inf.GetIndexer().Replace(objs, ""); err != nil {
			f.t.Fatal(err)
		}
	}
	k, th := f.kube, f.th.ToolhiveV1beta1()
	lo := metav1.ListOptions{}
	l1, e1 := k.CoreV1().ConfigMaps("").List(ctx, lo)
	replace(f.kubeInf.Core().V1().ConfigMaps().Informer(), l1, e1)
	l2, e2 := k.CoreV1().ServiceAccounts("").List(ctx, lo)
	replace(f.kubeInf.Core().V1().ServiceAccounts().Informer(), l2, e2)
	l3, e3 := k.RbacV1().Roles("").List(ctx, lo)
	replace(f.kubeInf.Rbac().V1().Roles().Informer(), l3, e3)
	l4, e4 := k.RbacV1().RoleBindings("").List(ctx, lo)
	replace(f.kubeInf.Rbac().V1().RoleBindings().Informer(), l4, e4)
	l5, e5 := k.AppsV1().Deployments("").List(ctx, lo)
	replace(f.kubeInf.Apps().V1().Deployments().Informer(), l5, e5)
	l6, e6 := k.CoreV1().Services("").List(ctx, lo)
	replace(f.kubeInf.Core().V1().Services().Informer(), l6, e6)
	l7, e7 := th.MCPServers("").List(ctx, lo)
	replace(f.thInf.Toolhive().V1beta1().MCPServers().Informer(), l7, e7)
	l8, e8 := th.MCPOIDCConfigs("").List(ctx, lo)
	replace(f.thInf.Toolhive().V1beta1().MCPOIDCConfigs().Informer(), l8, e8)
	l9, e9 := th.MCPGroups("").List(ctx, lo)
	replace(f.thInf.Toolhive().V1beta1().MCPGroups().Informer(), l9, e9)
	f.kube.ClearActions()
	f.th.ClearActions()
}

// sync runs one sync and returns the write actions it sent.
func (f *fixture) sync(name string) ([]core.Action, error) {
	f.t.Helper()
	err := f.c.sync(context.Background(), testNS+"/"+name)
	return f.writes(), err
}

func (f *fixture) writes() []core.Action {
	var out []core.Action
	for _, a := range append(f.kube.Actions(), f.th.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a)
	}
	return out
}

// converge syncs until nothing is written (at most n rounds), refreshing
// the caches between rounds, and returns the number of rounds.
func (f *fixture) converge(name string) {
	f.t.Helper()
	for range 6 {
		acts, err := f.sync(name)
		if err != nil {
			f.t.Fatalf("sync: %v", err)
		}
		if len(acts) == 0 {
			return
		}
		f.applyServerBehaviour()
		f.refresh()
	}
	f.t.Fatalf("did not converge: last actions %s", describe(f.writes()))
}

// applyServerBehaviour mutates what the fake server stores the way the real
// API server would: defaulting, JSON round trip, foreign annotations from
// other controllers. A comparator that looked at any of these would see
// drift forever.
func (f *fixture) applyServerBehaviour() {
	ctx := context.Background()
	deps, _ := f.kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	for i := range deps.Items {
		d := roundTrip(&deps.Items[i])
		defaultDeployment(d)
		if _, err := f.kube.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
	svcs, _ := f.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	for i := range svcs.Items {
		s := roundTrip(&svcs.Items[i])
		defaultService(s)
		if _, err := f.kube.CoreV1().Services(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
	sas, _ := f.kube.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	for i := range sas.Items {
		sa := sas.Items[i].DeepCopy()
		sa.Secrets = []corev1.ObjectReference{{Name: sa.Name + "-token"}}
		if _, err := f.kube.CoreV1().ServiceAccounts(sa.Namespace).Update(ctx, sa, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func roundTrip[T any](obj *T) *T {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return &out
}

// defaultDeployment applies the API server's defaults and the marks other
// controllers leave on a Deployment.
func defaultDeployment(d *appsv1.Deployment) {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations["deployment.kubernetes.io/revision"] = "3"
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
	}}
	t := &d.Spec.Template
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-20T10:00:00Z"
	p := &t.Spec
	p.RestartPolicy = corev1.RestartPolicyAlways
	p.DNSPolicy = corev1.DNSClusterFirst
	p.SchedulerName = corev1.DefaultSchedulerName
	p.TerminationGracePeriodSeconds = ptr.To[int64](30)
	if p.SecurityContext == nil {
		p.SecurityContext = &corev1.PodSecurityContext{}
	}
	for i := range p.Volumes {
		v := &p.Volumes[i]
		if v.ConfigMap != nil && v.ConfigMap.DefaultMode == nil {
			v.ConfigMap.DefaultMode = ptr.To[int32](420)
		}
		if v.Secret != nil && v.Secret.DefaultMode == nil {
			v.Secret.DefaultMode = ptr.To[int32](420)
		}
	}
	for i := range p.Containers {
		c := &p.Containers[i]
		c.ImagePullPolicy = corev1.PullAlways
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			if pr != nil && pr.SuccessThreshold == 0 {
				pr.SuccessThreshold = 1
			}
		}
		for j := range c.Env {
			if fr := c.Env[j].ValueFrom; fr != nil && fr.FieldRef != nil && fr.FieldRef.APIVersion == "" {
				fr.FieldRef.APIVersion = "v1"
			}
		}
	}
}

func defaultService(s *corev1.Service) {
	s.Spec.ClusterIP = "10.96.12.34"
	s.Spec.ClusterIPs = []string{"10.96.12.34"}
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	if s.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"] = "nlb"
}

func describe(acts []core.Action) string {
	var b strings.Builder
	for _, a := range acts {
		b.WriteString(a.GetVerb() + " " + a.GetResource().Resource)
		if a.GetSubresource() != "" {
			b.WriteString("/" + a.GetSubresource())
		}
		if p, ok := a.(core.PatchAction); ok {
			b.WriteString(" " + string(p.GetPatch()))
		}
		b.WriteString("; ")
	}
	return b.String()
}

// newServer returns a minimal valid MCPServer with the finalizer already
// present and the server's defaults applied.
func newServer(name string, mut ...func(*thv1.MCPServer)) *thv1.MCPServer {
	s := &thv1.MCPServer{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPServer},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNS, UID: k8stypes.UID("uid-" + name), Generation: 1,
			ResourceVersion: "1", Finalizers: []string{Finalizer},
		},
		Spec: thv1.MCPServerSpec{
			Image: "ghcr.io/example/fetch:1.0", Transport: thv1.TransportStdio,
			ProxyMode: thv1.TransportStreamableHTTP, ProxyPort: 8080, SessionAffinity: thv1.SessionAffinityClientIP,
		},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

func newOIDCConfig(name string, inline bool, valid bool) *thv1.MCPOIDCConfig {
	cfg := &thv1.MCPOIDCConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPOIDCConfig},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: k8stypes.UID("oidc-" + name), Generation: 1, ResourceVersion: "1"},
	}
	if inline {
		cfg.Spec = thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeInline, Inline: &thv1.InlineOIDCConfig{
			Issuer: "https://idp.example.com", JWKSURL: "https://idp.example.com/jwks", ClientID: "hive",
			ClientSecretRef: &thv1.SecretKeyRef{Name: "idp", Key: "secret"},
			CABundleRef:     &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "idp-ca", Key: "ca.crt"}},
		}}
	} else {
		cfg.Spec = thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeKubernetesServiceAccount,
			KubernetesServiceAccount: &thv1.KubernetesServiceAccountOIDCConfig{Issuer: "https://kubernetes.default.svc"}}
	}
	status := metav1.ConditionTrue
	if !valid {
		status = metav1.ConditionFalse
	}
	cfg.Status = thv1.MCPOIDCConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
		Type: thv1.ConditionValid, Status: status, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(testNow),
	}}}
	return cfg
}

// childrenOf returns the desired children as a flat list for table tests.
func childrenOf(d *Desired) []runtime.Object {
	out := []runtime.Object{d.RunConfig, d.RunnerServiceAccount, d.RunnerRole, d.RunnerRoleBinding, d.Deployment, d.Service}
	if d.BackendServiceAccount != nil {
		out = append(out, d.BackendServiceAccount)
	}
	return out
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
