package framework

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Classify returns the API Priority and Fairness flow schema and priority
// level the API server puts cfg's requests in. It reads the headers APF
// sets on every response it classified (X-Kubernetes-PF-FlowSchema-UID,
// X-Kubernetes-PF-PriorityLevel-UID) and resolves them to names with the
// admin client. The request is a one-item list of ConfigMaps in ns, a read
// the controller's own role allows.
func Classify(ctx context.Context, admin kubernetes.Interface, cfg *rest.Config, ns string) (flowSchema, level string, err error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/api/v1/namespaces/"+ns+"/configmaps?limit=1", nil)
	if err != nil {
		return "", "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("listing ConfigMaps in %s: %s", ns, resp.Status)
	}
	fsUID, plUID := resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
	schemas, err := admin.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", "", err
	}
	for _, s := range schemas.Items {
		if string(s.UID) == fsUID {
			flowSchema = s.Name
		}
	}
	levels, err := admin.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", "", err
	}
	for _, l := range levels.Items {
		if string(l.UID) == plUID {
			level = l.Name
		}
	}
	return flowSchema, level, nil
}
