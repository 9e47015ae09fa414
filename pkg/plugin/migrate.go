package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// newMigrateStorage is the storage-version migration ToolHive's operator
// runs as a controller (its chart's storageVersionMigrator feature): every
// object of a toolhive.stacklok.dev kind whose CRD lists more than its
// storage version in status.storedVersions is written back unchanged, so
// the API server stores it at the storage version, and the CRD's stored
// versions are then trimmed to that one. hivekeeper runs it as a command
// a cluster admin runs once, rather than as part of the controller: it
// needs update on every object of the group and on the CRDs' status,
// which the controller otherwise never holds (and a namespace-scoped
// install cannot).
func newMigrateStorage(g *globals, stdout io.Writer) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "migrate-storage",
		Short: "Rewrite toolhive.stacklok.dev objects at their storage version and trim the CRDs' storedVersions",
		Long: `migrate-storage finds the toolhive.stacklok.dev CRDs whose status.storedVersions
list a version besides the storage version, writes every object of those
kinds back unchanged (the API server stores it at the storage version) and
then sets storedVersions to the storage version alone, so that a later
release may stop serving the old version. A CRD is trimmed only when every
object of it was written; one changed meanwhile is left for the next run.
--dry-run says what it would do and changes nothing.

Exit status: 0 when every listed CRD was migrated (or nothing needed it);
1 when something could not be written.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.clientConfig().ClientConfig()
			if err != nil {
				return err
			}
			return migrateStorage(cmd.Context(), cfg, g.version, stdout, dryRun)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "Say what would be migrated, and change nothing.")
	return cmd
}

func migrateStorage(ctx context.Context, cfg *rest.Config, version string, out io.Writer, dryRun bool) error {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-hivekeeper/" + version
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("reading the CRDs: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b apiextensionsv1.CustomResourceDefinition) int { return strings.Compare(a.Name, b.Name) })
	failed := 0
	for i := range list.Items {
		crd := &list.Items[i]
		storage := storageVersion(crd)
		if crd.Spec.Group != thv1.GroupName || storage == "" || slices.Equal(crd.Status.StoredVersions, []string{storage}) {
			continue
		}
		if dryRun {
			fmt.Fprintf(out, "%s: stored as %s; would rewrite its objects as %s and trim storedVersions to [%s]\n",
				crd.Name, strings.Join(crd.Status.StoredVersions, ", "), storage, storage)
			continue
		}
		rewritten, err := rewriteAll(ctx, dyn.Resource(schema.GroupVersionResource{Group: crd.Spec.Group, Version: storage, Resource: crd.Spec.Names.Plural}))
		if err != nil {
			failed++
			fmt.Fprintf(out, "%s: %d objects rewritten, storedVersions left as [%s]: %v\n", crd.Name, rewritten, strings.Join(crd.Status.StoredVersions, ", "), err)
			continue
		}
		before := strings.Join(crd.Status.StoredVersions, ", ")
		crd.Status.StoredVersions = []string{storage}
		if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{}); err != nil {
			failed++
			fmt.Fprintf(out, "%s: %d objects rewritten; trimming storedVersions: %v\n", crd.Name, rewritten, err)
			continue
		}
		fmt.Fprintf(out, "%s: %d objects rewritten as %s; storedVersions [%s] -> [%s]\n", crd.Name, rewritten, storage, before, storage)
	}
	if failed > 0 {
		return &exitCode{code: exitFailed, err: fmt.Errorf("%d CRDs not migrated; run migrate-storage again", failed)}
	}
	return nil
}

// storageVersion is the version a CRD stores objects as.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// rewriteAll writes every object of r back as read. The API server
// encodes the body at the storage version; an object stored at another
// one differs in bytes and is written, one already there is not (the
// write is elided). An object changed between the read and the write is
// read again and written again; one deleted meanwhile needs nothing.
func rewriteAll(ctx context.Context, r dynamic.NamespaceableResourceInterface) (int, error) {
	n := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		page, err := r.List(ctx, opts)
		if err != nil {
			return n, fmt.Errorf("listing: %w", err)
		}
		for i := range page.Items {
			if err := rewrite(ctx, r.Namespace(page.Items[i].GetNamespace()), &page.Items[i]); err != nil {
				return n, err
			}
			n++
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return n, nil
		}
	}
}

func rewrite(ctx context.Context, r dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	for range 5 {
		_, err := r.Update(ctx, obj, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("writing %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
			}
			return nil
		}
		fresh, err := r.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		obj = fresh
	}
	return fmt.Errorf("writing %s/%s: it kept changing", obj.GetNamespace(), obj.GetName())
}
