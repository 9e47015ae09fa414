package workload

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hivekeeper/hivekeeper/pkg/controller"
)

// DeleteStaleChild deletes a child the owner created earlier but no longer
// wants (for example the runner RBAC once the spec names its own service
// account), so that no permissions are left granted to an account no pod
// uses. It reads the cache first and sends nothing when the child is
// absent, and it never deletes an object it does not control.
func DeleteStaleChild[T metav1.Object](ctx context.Context, w *controller.Writer, ops controller.ChildOps[T], namespace, name string, ownerUID types.UID) error {
	have, err := ops.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOf(have); ref == nil || ref.UID != ownerUID {
		return nil
	}
	uid := have.GetUID()
	return controller.DeleteChild(ctx, w, ops.Resource, namespace, name, ops.Client(namespace).Delete,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}
