package toolhive

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Where the two operators' Deployments are in the suites that switch
// between them: ToolHive's operator as its chart installs it, hivekeeper
// as its chart does when installed scaled to 0.
const (
	OperatorNamespace   = "toolhive-system"
	OperatorName        = "toolhive-operator"
	HivekeeperNamespace = "hivekeeper-system"
	HivekeeperName      = "hivekeeper"
)

// StandIn plays the Deployment controller and kubelet for the two
// operators while `kubectl hivekeeper switch` hands the workloads from one
// to the other: the operators run here as processes (or in-process), so
// ToolHive's operator runs while its Deployment asks for a replica,
// hivekeeper while its Deployment does, each Deployment's status says
// so, and the pod the plugin starts to check hivekeeper's image runs to
// completion. Nothing else of a cluster is played: the suites play their
// workloads' pods themselves.
type StandIn struct {
	T    testing.TB
	Kube kubernetes.Interface
	// StartToolHive starts ToolHive's operator, ready, and returns what
	// stops it.
	StartToolHive func() (stop func())
	// StartHivekeeper starts hivekeeper and returns what tells whether it
	// is ready (its caches synced) and what stops it.
	StartHivekeeper func() (ready func() bool, stop func())

	stopToolHive   func()
	hivekeeperUp   func() bool
	stopHivekeeper func()
}

// ToolHiveRunning and HivekeeperRunning say which operators run now.
func (k *StandIn) ToolHiveRunning() bool   { return k.stopToolHive != nil }
func (k *StandIn) HivekeeperRunning() bool { return k.stopHivekeeper != nil }

// StopAll stops what runs; for a test's cleanup.
func (k *StandIn) StopAll() {
	if k.stopToolHive != nil {
		k.stopToolHive()
		k.stopToolHive = nil
	}
	if k.stopHivekeeper != nil {
		k.stopHivekeeper()
		k.stopHivekeeper = nil
	}
}

// ToolHiveStarted says ToolHive's operator already runs, started by the
// suite before the stand-in took over, and what stops it.
func (k *StandIn) ToolHiveStarted(stop func()) { k.stopToolHive = stop }

// Step brings each operator and Deployment status in line with what its
// Deployment asks for, once.
func (k *StandIn) Step(ctx context.Context) {
	t := k.T
	t.Helper()
	op, err := k.Kube.AppsV1().Deployments(OperatorNamespace).Get(ctx, OperatorName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := ptr.Deref(op.Spec.Replicas, 1) > 0
	switch {
	case want && k.stopToolHive == nil:
		k.stopToolHive = k.StartToolHive()
	case !want && k.stopToolHive != nil:
		k.stopToolHive()
		k.stopToolHive = nil
	}
	k.status(ctx, op, k.stopToolHive != nil)

	hk, err := k.Kube.AppsV1().Deployments(HivekeeperNamespace).Get(ctx, HivekeeperName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = ptr.Deref(hk.Spec.Replicas, 1) > 0
	switch {
	case want && k.stopHivekeeper == nil:
		k.hivekeeperUp, k.stopHivekeeper = k.StartHivekeeper()
	case !want && k.stopHivekeeper != nil:
		k.stopHivekeeper()
		k.stopHivekeeper = nil
	}
	k.status(ctx, hk, k.stopHivekeeper != nil && k.hivekeeperUp())

	pods, err := k.Kube.CoreV1().Pods(HivekeeperNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=pull-check"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pull-check", Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
		if _, err := k.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
}

// status writes d's status: all its replicas ready when running, none
// when not.
func (k *StandIn) status(ctx context.Context, d *appsv1.Deployment, running bool) {
	st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
	if running {
		n := ptr.Deref(d.Spec.Replicas, 1)
		st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas = n, n, n, n
	}
	if equality.Semantic.DeepEqual(d.Status, st) {
		return
	}
	d = d.DeepCopy()
	d.Status = st
	if _, err := k.Kube.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		k.T.Fatal(err)
	}
}

// Run runs the plugin binary with args while the stand-in plays its
// part, and returns its exit code and what it printed.
func (k *StandIn) Run(plugin string, args ...string) (code int, stdout, stderr string) {
	t := k.T
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(plugin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ctx := context.Background()
	var err error
wait:
	for {
		select {
		case err = <-exited:
			break wait
		case <-time.After(100 * time.Millisecond):
			k.Step(ctx)
		}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	k.Step(ctx)
	return code, out.String(), errOut.String()
}

// HivekeeperDeployment is hivekeeper's chart's Deployment installed
// scaled to 0 (--set replicaCount=0), without leader election: what
// switch finds by the chart's labels and scales.
func HivekeeperDeployment() *appsv1.Deployment {
	sel := map[string]string{"app.kubernetes.io/name": "hivekeeper", "app.kubernetes.io/instance": "hivekeeper", "app.kubernetes.io/component": "controller"}
	labels := map[string]string{"app.kubernetes.io/part-of": "hivekeeper", "app.kubernetes.io/managed-by": "Helm"}
	for k, v := range sel {
		labels[k] = v
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: HivekeeperNamespace, Name: HivekeeperName, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{
				ServiceAccountName: HivekeeperName,
				Containers:         []corev1.Container{{Name: "controller", Image: "ghcr.io/hivekeeper/hivekeeper:dev"}}}}},
	}
}

// InstallHivekeeper creates hivekeeper's ServiceAccount (the image check's
// pod runs as it) and its Deployment scaled to 0 in HivekeeperNamespace,
// which must exist.
func InstallHivekeeper(ctx context.Context, kube kubernetes.Interface) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: HivekeeperNamespace, Name: HivekeeperName}}
	if _, err := kube.CoreV1().ServiceAccounts(HivekeeperNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := kube.AppsV1().Deployments(HivekeeperNamespace).Create(ctx, HivekeeperDeployment(), metav1.CreateOptions{})
	return err
}
