package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Controller is a hivekeeper controller Deployment found in the cluster.
type Controller struct {
	Namespace string
	Name      string
	Image     string
	// Version is the image's tag, or the Deployment's
	// app.kubernetes.io/version label when the image is pinned by digest
	// alone (the chart sets the label to the image's version).
	Version string
}

func newVersion(version string, g *globals, stdout, stderr io.Writer) *cobra.Command {
	var client bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the running controller's",
		Long: `version prints the plugin's version, then the version of each hivekeeper
controller Deployment in the cluster (in -n's namespace when given, else in
every namespace), read from its image tag. It warns, on stderr, when they
differ: use the plugin of the controller's release. --client prints the
plugin's version alone and reads nothing from the cluster.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if client {
				_, err := fmt.Fprintln(stdout, version)
				return err
			}
			fmt.Fprintf(stdout, "plugin: %s\n", version)
			cc := g.clientConfig()
			cfg, err := cc.ClientConfig()
			if err != nil {
				return fmt.Errorf("the controller's version: %w", err)
			}
			ns := ""
			if n, explicit, err := cc.Namespace(); err == nil && explicit {
				ns = n
			}
			c, err := newClients(cfg, version)
			if err != nil {
				return err
			}
			return printControllerVersions(cmd.Context(), c.kube, ns, version, stdout, stderr)
		},
	}
	cmd.Flags().BoolVar(&client, "client", false, "Print the plugin's version only.")
	return cmd
}

// printControllerVersions writes a line per controller Deployment in
// namespace (every namespace when empty) and warns on stderr about each
// whose version is not the plugin's.
func printControllerVersions(ctx context.Context, kube kubernetes.Interface, namespace, version string, stdout, stderr io.Writer) error {
	controllers, err := findControllers(ctx, kube, namespace)
	if err != nil {
		return err
	}
	if len(controllers) == 0 {
		where := "any namespace"
		if namespace != "" {
			where = "namespace " + namespace
		}
		_, err := fmt.Fprintf(stdout, "controller: none found (no Deployment labelled %s in %s)\n", hivekeeperSelector, where)
		return err
	}
	for _, c := range controllers {
		v := c.Version
		if v == "" {
			v = "unknown"
		}
		fmt.Fprintf(stdout, "controller %s/%s: %s (%s)\n", c.Namespace, c.Name, v, c.Image)
		if !sameVersion(version, c.Version) {
			fmt.Fprintf(stderr, "warning: the plugin is %s but the controller %s/%s runs %s: use the plugin of the controller's release\n",
				version, c.Namespace, c.Name, v)
		}
	}
	return nil
}

// findControllers lists hivekeeper's controller Deployments.
func findControllers(ctx context.Context, kube kubernetes.Interface, namespace string) ([]Controller, error) {
	list, err := kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: hivekeeperSelector})
	if err != nil {
		return nil, fmt.Errorf("looking for hivekeeper's controller: %w", err)
	}
	var out []Controller
	for i := range list.Items {
		d := &list.Items[i]
		c := Controller{Namespace: d.Namespace, Name: d.Name}
		if len(d.Spec.Template.Spec.Containers) > 0 {
			c.Image = d.Spec.Template.Spec.Containers[controllerContainer(d)].Image
			c.Version = imageTag(c.Image)
		}
		if c.Version == "" {
			c.Version = d.Labels[labelVersion]
		}
		out = append(out, c)
	}
	return out, nil
}

// sameVersion compares two versions, a leading "v" aside (the release
// v0.1.0 is tagged 0.1.0 on the image); an unknown version is not the same.
func sameVersion(a, b string) bool {
	return a != "" && b != "" && strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v")
}
