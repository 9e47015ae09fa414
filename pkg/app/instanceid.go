package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Where ToolHive's operator keeps its installation's instance id: a
// ConfigMap in the operator's namespace whose key holds a small JSON
// document. hivekeeper reads the same one, and creates it as ToolHive's
// operator does when it is missing, so a switch keeps the id every
// workload carries and a switch back finds it.
const (
	InstanceIDConfigMap = "toolhive-operator-telemetry"
	InstanceIDKey       = "instance-id"
	// DefaultInstanceIDNamespace is ToolHive's operator's namespace when
	// it is not told its own.
	DefaultInstanceIDNamespace = "toolhive-system"
	// instanceIDWriter is the controller label of the instance id's
	// writes in hivekeeper_writes_total.
	instanceIDWriter = "instance-id"
)

// telemetryRecord is the document under InstanceIDKey. ToolHive's operator
// also records its update checks there; hivekeeper writes the fields only
// when it creates the record, and never changes a stored id.
type telemetryRecord struct {
	InstanceID      string    `json:"instance_id"`
	LastUpdateCheck time.Time `json:"last_update_check"`
	LatestVersion   string    `json:"latest_version"`
}

// ErrInstanceIDUnavailable is returned when the id could be neither read
// nor stored because of errors that may pass (the API server unreachable
// or overloaded): the caller should exit and be restarted rather than run
// without it, since every workload's pod template carries the id.
var ErrInstanceIDUnavailable = errors.New("the installation's instance id is unavailable")

// InstanceIDBackoff retries a lookup that failed for a reason that may
// pass: five attempts over about 15 seconds.
var InstanceIDBackoff = wait.Backoff{Steps: 5, Duration: time.Second, Factor: 2, Jitter: 0.1}

// ResolveInstanceID returns the installation's instance id from the
// ConfigMap in namespace, storing a new one when there is none (the
// ConfigMap missing, or holding no usable id). Errors a retry cannot fix
// (forbidden, unauthorized, invalid, a namespace that does not exist) are
// returned at once: the caller
// runs without the id, as ToolHive's operator does. Others are retried
// with backoff and then wrap ErrInstanceIDUnavailable. Two replicas that
// race to store an id both end with the one stored first.
func ResolveInstanceID(ctx context.Context, kube kubernetes.Interface, namespace string, backoff wait.Backoff) (string, error) {
	var id string
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		id, last = resolveInstanceIDOnce(ctx, kube, namespace)
		switch {
		case last == nil:
			return true, nil
		case permanent(last):
			return false, last
		default:
			klog.FromContext(ctx).Info("Retrying the installation's instance id", "configMap", klog.KRef(namespace, InstanceIDConfigMap), "err", last.Error())
			return false, nil
		}
	})
	switch {
	case err == nil:
		return id, nil
	case permanent(err):
		return "", err
	case last != nil:
		return "", fmt.Errorf("%w: %w", ErrInstanceIDUnavailable, last)
	default:
		return "", fmt.Errorf("%w: %w", ErrInstanceIDUnavailable, err)
	}
}

// ResolveUsageMetrics completes ToolHive's operator's usage-metrics
// settings u as that operator does at start: where the release passes the
// installation's id to the workloads and nothing opts out, the id is
// resolved from namespace (ResolveInstanceID). An id that cannot be had
// for a reason that may pass is an error wrapping
// ErrInstanceIDUnavailable: the caller should stop rather than run
// without it, since that would change every workload. One refused for
// good (no permission, no such namespace) is logged and leaves the
// workloads without it, as ToolHive's operator does.
func ResolveUsageMetrics(ctx context.Context, kube kubernetes.Interface, rel release.Release, u wiring.UsageMetrics, namespace string) (wiring.UsageMetrics, error) {
	if !rel.WorkloadUsageMetrics || u.SkipUpdateCheck {
		return u, nil
	}
	id, err := ResolveInstanceID(ctx, kube, namespace, InstanceIDBackoff)
	switch {
	case errors.Is(err, ErrInstanceIDUnavailable):
		return u, err
	case err != nil:
		klog.FromContext(ctx).Error(err, "Cannot read or store the installation's instance id; workloads get none", "configMap", klog.KRef(namespace, InstanceIDConfigMap))
	default:
		u.AnonymousID = id
	}
	return u, nil
}

// errNoNamespace: the namespace the ConfigMap belongs in does not exist,
// so no ToolHive operator ever ran there; a retry cannot help.
var errNoNamespace = errors.New("its namespace does not exist")

func permanent(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsInvalid(err) || errors.Is(err, errNoNamespace)
}

// StoredInstanceID is the id a ConfigMap holds, "" when it holds none usable.
func StoredInstanceID(cm *corev1.ConfigMap) string {
	var rec telemetryRecord
	if json.Unmarshal([]byte(cm.Data[InstanceIDKey]), &rec) != nil {
		return ""
	}
	return rec.InstanceID
}

func resolveInstanceIDOnce(ctx context.Context, kube kubernetes.Interface, namespace string) (string, error) {
	cms := kube.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, InstanceIDConfigMap, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	if err == nil {
		if id := StoredInstanceID(cm); id != "" {
			return id, nil
		}
	}
	rec := telemetryRecord{InstanceID: uuid.NewString()}
	doc, err2 := json.Marshal(rec)
	if err2 != nil {
		return "", err2
	}
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: InstanceIDConfigMap, Namespace: namespace},
			Data:       map[string]string{InstanceIDKey: string(doc)},
		}, metav1.CreateOptions{FieldManager: framework.FieldManager})
		framework.CountWrite(instanceIDWriter, "configmaps", "create", err)
		switch {
		case apierrors.IsAlreadyExists(err):
			return readStoredID(ctx, kube, namespace)
		case apierrors.IsNotFound(err):
			return "", fmt.Errorf("creating ConfigMap %s/%s: %w: %w", namespace, InstanceIDConfigMap, errNoNamespace, err)
		case err != nil:
			return "", err
		}
		return rec.InstanceID, nil
	}
	// The ConfigMap exists without a usable id: store one under the lock
	// of the version read, so another writer's id wins the race.
	patch, err2 := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cm.ResourceVersion},
		"data":     map[string]string{InstanceIDKey: string(doc)},
	})
	if err2 != nil {
		return "", err2
	}
	_, err = cms.Patch(ctx, InstanceIDConfigMap, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: framework.FieldManager})
	framework.CountWrite(instanceIDWriter, "configmaps", "patch", err)
	if apierrors.IsConflict(err) {
		return readStoredID(ctx, kube, namespace)
	}
	return rec.InstanceID, err
}

// readStoredID reads the id another writer has just stored.
func readStoredID(ctx context.Context, kube kubernetes.Interface, namespace string) (string, error) {
	cm, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, InstanceIDConfigMap, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if id := StoredInstanceID(cm); id != "" {
		return id, nil
	}
	return "", fmt.Errorf("ConfigMap %s/%s holds no instance id after another writer stored one", namespace, InstanceIDConfigMap)
}
