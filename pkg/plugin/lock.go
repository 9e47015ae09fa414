package plugin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Target is the cluster a switch acts on, as the kubeconfig names it:
// echoed before anything is done, and asked about unless --yes.
type Target struct {
	Context string `json:"context,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	Server  string `json:"server"`
	// User is the kubeconfig's user, with whom it impersonates.
	User string `json:"user,omitempty"`
}

func (t Target) String() string {
	ctx := t.Context
	if ctx == "" {
		ctx = "(none: in-cluster or flags)"
	}
	s := fmt.Sprintf("context %s, cluster %s at %s", ctx, orNone(t.Cluster), t.Server)
	if t.User != "" {
		s += ", as " + t.User
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return s
}

// lockTimeoutDefault is how long a run may go without renewing the
// record before another may take it over with --force.
const lockTimeoutDefault = 15 * time.Minute

// inProgress is why a run refuses a record another run holds; "" when
// none holds it, or when force takes over one whose holder went silent
// for longer than its timeout.
func inProgress(rec *switchRecord, now time.Time, force bool) string {
	h := rec.Holder
	if h == nil || (force && h.stale(now)) {
		return ""
	}
	why := fmt.Sprintf("a %s is in progress (phase %s), held by %s", h.Command, rec.Phase, h)
	if rec.Step != "" {
		why += "; last step: " + rec.Step
	}
	silent := now.Sub(h.Renewed.Time).Round(time.Second)
	if h.stale(now) {
		return why + fmt.Sprintf("; its holder has not renewed it for %s, more than its stated timeout of %s: if that run is gone, take the record over with --force", silent, h.Timeout.Duration)
	}
	return why + fmt.Sprintf("; last renewed %s ago: --force takes it over only once it is older than its stated timeout of %s (at %s)",
		silent, h.Timeout.Duration, h.Renewed.Add(h.Timeout.Duration).UTC().Format(time.RFC3339))
}

// recordEvent records an event on the record's ConfigMap (on obj when
// given): what the plugin did, for `kubectl describe` and the cluster's
// event pipeline. An event that cannot be written is no reason to stop a
// switch half-way: its error is dropped.
func recordEvent(ctx context.Context, kube kubernetes.Interface, obj corev1.ObjectReference, eventType, reason, message string) {
	now := metav1.NewTime(time.Now())
	e := &corev1.Event{
		// Named as client-go's recorder names events.
		ObjectMeta:     metav1.ObjectMeta{Namespace: obj.Namespace, Name: fmt.Sprintf("%s.%x", obj.Name, now.UnixNano())},
		InvolvedObject: obj, Type: eventType, Reason: reason, Message: truncateEvent(message),
		Source:         corev1.EventSource{Component: fieldManager},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: fieldManager, ReportingInstance: fieldManager,
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = kube.CoreV1().Events(obj.Namespace).Create(ectx, e, metav1.CreateOptions{FieldManager: fieldManager})
}

// truncateEvent keeps a message within what the API server accepts of an
// event's (1 KiB).
func truncateEvent(s string) string {
	if len(s) > 1000 {
		return s[:1000] + "..."
	}
	return s
}

// recordRef is the record's ConfigMap as an event's object.
func recordRef(ns string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: recordName}
}

// deploymentRefOf is a Deployment as an event's object.
func deploymentRefOf(ns, name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}
}

// confirmer asks the person at the keyboard a yes/no question.
type confirmer func(question string) (bool, error)

// askOn is a confirmer that prints the question on out and reads the
// answer from in: "y" or "yes" confirms, anything else does not.
func askOn(in io.Reader, out io.Writer) confirmer {
	r := bufio.NewReader(in)
	return func(question string) (bool, error) {
		fmt.Fprintf(out, "%s [y/N]: ", question)
		line, err := r.ReadString('\n')
		if err != nil && line == "" {
			return false, nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true, nil
		}
		return false, nil
	}
}
