package handover_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// hivekeeper is the running binary.
type hivekeeper struct {
	metricsURL string
	log        string
	cmd        *exec.Cmd
	done       chan error
	stopped    bool
}

// startHivekeeper runs the binary as the chart's Deployment would, but
// with one replica and no leader election, plain-HTTP metrics on a
// loopback port, and the flags that keep every operator-wide setting of
// ToolHive's operator (operatorenv.Flags of its chart's environment), and
// waits until it is ready (its caches synced).
func (s *suite) startHivekeeper(bin string) *hivekeeper {
	t := s.t
	t.Helper()
	ports, err := framework.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(s.dir, "hivekeeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	health := fmt.Sprintf("127.0.0.1:%d", ports[1])
	hk := &hivekeeper{metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]), log: logFile.Name(), done: make(chan error, 1)}
	hk.cmd = exec.Command(bin, append([]string{
		"--kubeconfig=" + s.kubeconfig[hiveUser],
		"--metrics-bind-address=" + fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--health-probe-bind-address=" + health,
	}, s.operatorFlags...)...)
	hk.cmd.Stdout, hk.cmd.Stderr = logFile, logFile
	hk.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := hk.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { hk.done <- hk.cmd.Wait() }()
	t.Cleanup(func() {
		if !hk.stopped {
			hk.stop(t)
		}
		if t.Failed() {
			t.Logf("hivekeeper log (tail):\n%s", toolhive.Tail(hk.log, 60))
		}
	})
	began := time.Now()
	toolhive.WaitReady(t, "hivekeeper", health, hk.exited)
	t.Logf("hivekeeper ready in %v", time.Since(began).Round(time.Millisecond))
	return hk
}

func (hk *hivekeeper) exited() error {
	select {
	case err := <-hk.done:
		hk.done <- err
		return fmt.Errorf("hivekeeper exited: %v\n%s", err, toolhive.Tail(hk.log, 40))
	default:
		return nil
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (hk *hivekeeper) stop(t *testing.T) {
	hk.stopped = true
	_ = hk.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-hk.done:
		hk.done <- err
		if err != nil {
			t.Errorf("hivekeeper exited after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = hk.cmd.Process.Kill()
		hk.done <- <-hk.done
		t.Errorf("hivekeeper still running 30s after SIGTERM; killed")
	}
}

// crossCheck compares hivekeeper's own count of its writes
// (hivekeeper_writes_total, every outcome) with the audit log's, by
// resource and verb, and requires hivekeeper_churn_writes_total to be 0.
// Events are the recorder's, not counted by hivekeeper_writes_total.
func (hk *hivekeeper) crossCheck(t *testing.T, audited []framework.AuditEvent) {
	m, err := scrape(hk.metricsURL)
	if err != nil {
		t.Errorf("scraping hivekeeper: %v", err)
		return
	}
	own := m.byLabels("hivekeeper_writes_total", "resource", "verb")
	logged := map[string]float64{}
	for _, e := range audited {
		if e.ObjectRef.Resource != "events" {
			logged[e.Resource()+" "+e.Verb]++
		}
	}
	keys := map[string]bool{}
	for k := range own {
		keys[k] = true
	}
	for k := range logged {
		keys[k] = true
	}
	for k := range keys {
		if own[k] != logged[k] {
			t.Errorf("hivekeeper_writes_total counts %v writes %s, the audit log %v", own[k], k, logged[k])
		}
	}
	if churn := m.sum("hivekeeper_churn_writes_total", nil); churn != 0 {
		t.Errorf("hivekeeper_churn_writes_total is %v, want 0", churn)
	}
}

// metrics is one read of a /metrics endpoint.
type metrics map[string]*dto.MetricFamily

func scrape(url string) (metrics, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	return metrics(fams), err
}

// sum adds the samples of a counter or gauge whose labels include match.
func (m metrics) sum(name string, match map[string]string) float64 {
	total := 0.0
	fam := m[name]
	if fam == nil {
		return 0
	}
	for _, s := range fam.GetMetric() {
		ok := true
		for k, v := range match {
			found := false
			for _, l := range s.GetLabel() {
				found = found || (l.GetName() == k && l.GetValue() == v)
			}
			ok = ok && found
		}
		if ok {
			total += s.GetCounter().GetValue() + s.GetGauge().GetValue()
		}
	}
	return total
}

// byLabels sums a counter by the values of labels, joined by a space.
func (m metrics) byLabels(name string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	fam := m[name]
	if fam == nil {
		return out
	}
	for _, s := range fam.GetMetric() {
		var key []string
		for _, want := range labels {
			for _, l := range s.GetLabel() {
				if l.GetName() == want {
					key = append(key, l.GetValue())
				}
			}
		}
		out[strings.Join(key, " ")] += s.GetCounter().GetValue() + s.GetGauge().GetValue()
	}
	return out
}

// playKubelet does what a cluster's controllers, kubelet and proxy runner
// would do for the Deployments of the load, none of which run here: each
// Deployment gets a ready status and one running, ready pod of its
// template, and each MCPServer the StatefulSet and Services its runner
// creates, ready. Statuses converge then as in a cluster: ToolHive's
// operator reads the pods, hivekeeper the Deployments.
func (s *suite) playKubelet() {
	t := s.t
	t.Helper()
	ctx := context.Background()
	deployments, pods, runners := 0, 0, 0
	for _, c := range s.cases {
		list, err := s.env.Kube.AppsV1().Deployments(c.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The runner's StatefulSet first: ToolHive's operator restarts
		// an Available proxy whose StatefulSet is missing, with a
		// timestamp in its pod template.
		for _, w := range c.Workloads {
			if w.Kind != "MCPServer" || !hasDeployment(list.Items, w.Name) {
				continue
			}
			s.env.CreateRunnerObjects(t, c.Namespace, w.Name, framework.RunnerLabels(w.Name))
			s.markStatefulSetReady(c.Namespace, w.Name)
			runners++
		}
		for i := range list.Items {
			d := &list.Items[i]
			s.runPod(d)
			pods++
			s.markDeploymentReady(d)
			deployments++
		}
	}
	embedding := s.markEmbeddingServersReady()
	t.Logf("played the kubelet: %d runner and %d EmbeddingServer StatefulSets ready, %d Deployments ready with %d pods",
		runners, embedding, deployments, pods)
}

func hasDeployment(list []appsv1.Deployment, name string) bool {
	for _, d := range list {
		if d.Name == name {
			return true
		}
	}
	return false
}

// markDeploymentReady does what the Deployment controller would once the
// pods run, retried when an operator wrote the Deployment meanwhile.
func (s *suite) markDeploymentReady(d *appsv1.Deployment) {
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := s.env.Kube.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		r := int32(1)
		if d.Spec.Replicas != nil {
			r = *d.Spec.Replicas
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
		_, err = s.env.Kube.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.t.Fatalf("marking Deployment %s/%s ready: %v", d.Namespace, d.Name, err)
	}
}

// runPod creates a pod of a Deployment's template, running and ready.
func (s *suite) runPod(d *appsv1.Deployment) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-0", Namespace: d.Namespace, Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
		Spec:       d.Spec.Template.Spec,
	}
	pod.Spec.NodeName = "node-0"
	if pc := pod.Spec.PriorityClassName; pc != "" {
		// The cluster a template names a PriorityClass for has it.
		_, err := s.env.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc}, Value: 1000}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			s.t.Fatal(err)
		}
	}
	created, err := s.env.Kube.CoreV1().Pods(d.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatalf("creating a pod of Deployment %s/%s: %v", d.Namespace, d.Name, err)
	}
	now := metav1.Now()
	created.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		StartTime: &now,
	}
	for _, c := range created.Spec.Containers {
		created.Status.ContainerStatuses = append(created.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	if _, err := s.env.Kube.CoreV1().Pods(d.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		s.t.Fatalf("marking pod %s/%s running: %v", d.Namespace, created.Name, err)
	}
}

func ptr[T any](v T) *T { return &v }

// markEmbeddingServersReady does what the StatefulSet controller and
// kubelet would for each EmbeddingServer's StatefulSet that an operator
// created: a vMCP naming an EmbeddingServer is deployed, by either
// operator, only once it is ready. It returns how many it marked.
func (s *suite) markEmbeddingServersReady() int {
	n := 0
	for _, c := range s.cases {
		for _, o := range c.Objects {
			if o.GetKind() != "EmbeddingServer" {
				continue
			}
			sts, err := s.env.Kube.AppsV1().StatefulSets(c.Namespace).Get(context.Background(), o.GetName(), metav1.GetOptions{})
			if err != nil || (sts.Status.ReadyReplicas > 0 && sts.Status.ObservedGeneration == sts.Generation) {
				continue
			}
			s.markStatefulSetReady(c.Namespace, o.GetName())
			n++
		}
	}
	return n
}

// markStatefulSetReady does what the StatefulSet controller and kubelet
// would for a StatefulSet (the runner's, an EmbeddingServer's), retried
// when an operator wrote it meanwhile.
func (s *suite) markStatefulSetReady(ns, name string) {
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sts, err := s.env.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		r := int32(1)
		if sts.Spec.Replicas != nil {
			r = *sts.Spec.Replicas
		}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: r, ReadyReplicas: r, AvailableReplicas: r, CurrentReplicas: r, UpdatedReplicas: r}
		_, err = s.env.Kube.AppsV1().StatefulSets(ns).UpdateStatus(ctx, sts, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.t.Fatalf("marking StatefulSet %s/%s ready: %v", ns, name, err)
	}
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
