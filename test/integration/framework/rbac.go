package framework

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hivekeeper/hivekeeper/pkg/rbac"
)

// InstallRunnerClusterRoles creates the ClusterRoles the controllers bind
// to the proxy runners, with pkg/rbac's rules and default names. In a
// cluster the Helm chart creates them; a test server or `make run` has no
// chart, and the runner RoleBindings would otherwise name roles that do
// not exist.
func InstallRunnerClusterRoles(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, cr := range rbac.DefaultRunners().ClusterRoles() {
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("creating ClusterRole %s: %w", cr.Name, err)
		}
	}
	return nil
}
