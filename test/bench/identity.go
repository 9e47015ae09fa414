package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The identities the controller can run with (-identity).
const (
	identityChart             = "chart"
	identityChartNoFlowSchema = "chart-no-flowschema"
	identityAdmin             = "admin"
)

// chartNamespace is the release namespace of the chart install the
// benchmark imitates.
const chartNamespace = "hivekeeper-system"

// chartKinds are the objects of hivekeeper's chart that make up the
// controller's identity as the API server sees it: who it is (the
// ServiceAccount), what it may do (its RBAC, and the runner ClusterRoles
// it binds) and how API Priority and Fairness classifies it (the
// FlowSchema).
var chartKinds = map[string]schema.GroupVersionResource{
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"FlowSchema":         {Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"},
}

// useChartIdentity creates the chartKinds objects of hivekeeper's chart,
// rendered by `helm template` with its default values, and makes the
// controller run as the chart's ServiceAccount, with a bound token from a
// TokenRequest as a real install's pod has:
// the benchmark's controller is authorized and classified by API Priority
// and Fairness as a real install's pod is, not as the admin.
//
// identity "chart-no-flowschema" renders the chart with
// flowSchema.create=false: a ServiceAccount APF knows nothing about.
func (e *env) useChartIdentity(ctx context.Context, root, identity string) error {
	out, err := exec.Command(filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		return fmt.Errorf("hack/helm.sh: %w", err)
	}
	args := []string{"template", "hivekeeper", filepath.Join(root, "deploy", "charts", "hivekeeper"), "--namespace", chartNamespace, "--skip-crds"}
	if identity == identityChartNoFlowSchema {
		args = append(args, "--set", "flowSchema.create=false")
	}
	cmd := exec.Command(strings.TrimSpace(string(out)), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("helm template: %v\n%s", err, stderr.String())
	}
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var sa string
	for _, doc := range strings.Split(string(rendered), "\n---") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil || obj.Object == nil {
			continue
		}
		gvr, ok := chartKinds[obj.GetKind()]
		if !ok {
			continue
		}
		if obj.GetKind() == "ServiceAccount" {
			sa = obj.GetName()
		}
		_, err := e.dyn.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
		// The test cluster already holds the runner ClusterRoles, with
		// the rules the chart's are tested to equal (pkg/rbac).
		if apierrors.IsAlreadyExists(err) && obj.GetKind() == "ClusterRole" {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating the chart's %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if sa == "" {
		return fmt.Errorf("hivekeeper's chart renders no ServiceAccount")
	}
	user := "system:serviceaccount:" + chartNamespace + ":" + sa
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + chartNamespace, "system:authenticated"}
	// The authorizer reads RBAC from an informer: wait until it sees the
	// grants.
	if err := poll(30*time.Second, func() bool {
		sar, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: benchNS},
		}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed
	}); err != nil {
		return fmt.Errorf("the chart's RBAC never took effect: %w", err)
	}
	// A bound token, as the kubelet projects into the controller's pod;
	// long enough for the longest sweep.
	expiry := int64((24 * time.Hour).Seconds())
	tr, err := e.kube.CoreV1().ServiceAccounts(chartNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token for the chart's ServiceAccount: %w", err)
	}
	e.controllerKubeconfig = filepath.Join(e.srv.Dir, "hivekeeper.kubeconfig")
	if err := e.srv.WriteKubeconfigForToken(e.controllerKubeconfig, tr.Status.Token); err != nil {
		return err
	}
	e.controllerConfig = e.srv.ConfigForToken(tr.Status.Token)
	what := "the RBAC and the FlowSchema of its chart"
	if identity == identityChartNoFlowSchema {
		what = "the RBAC of its chart, without its FlowSchema"
	}
	logf("hivekeeper runs as %s, with %s", user, what)
	return nil
}
