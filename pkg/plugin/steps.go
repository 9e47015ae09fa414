package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	crdyaml "github.com/hivekeeper/hivekeeper/config/crd"
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
)

var getOpts = metav1.GetOptions{}

func listBy(selector string) metav1.ListOptions { return metav1.ListOptions{LabelSelector: selector} }

// hivekeeperSelector marks the Deployment of hivekeeper's chart.
const hivekeeperSelector = "app.kubernetes.io/part-of=hivekeeper,app.kubernetes.io/component=controller"

// Outcome is what a switch did to the watched namespaces: each child and
// custom resource before the first operator stopped, compared with after
// the second settled.
type Outcome struct {
	// Settled is false when the namespaces were still changing at --wait.
	Settled bool   `json:"settled"`
	Took    string `json:"took"`
	// Restarted are the Deployments and StatefulSets whose pod template
	// changed or that were recreated: their pods were replaced.
	Restarted []Change `json:"restarted"`
	// Recreated are children with a new UID.
	Recreated []Change `json:"recreated"`
	// Rewritten are ConfigMaps whose data changed.
	Rewritten []Change `json:"rewritten"`
	Created   []Change `json:"created"`
	Deleted   []Change `json:"deleted"`
	// Changed counts, by kind, the objects with a new resourceVersion: a
	// status, a finalizer, a label; written by anyone.
	Changed map[string]int `json:"changed"`
	// Unpredicted are the restarts preflight did not predict.
	Unpredicted []string `json:"unpredicted,omitempty"`
}

func (o *Outcome) changed() int {
	n := 0
	for _, c := range o.Changed {
		n += c
	}
	return n
}

// compareSnapshots compares the objects of two snapshots; predicted are
// the restarts expected.
func compareSnapshots(before, after *snapshot, predicted []Restart) *Outcome {
	o := &Outcome{Restarted: []Change{}, Recreated: []Change{}, Rewritten: []Change{}, Created: []Change{}, Deleted: []Change{}, Changed: map[string]int{}}
	b, a := objectsOf(before), objectsOf(after)
	for _, key := range sortedKeys(a) {
		now := a[key]
		was, ok := b[key]
		resource, ns, name := splitKey(key)
		c := Change{Kind: kinds[resource], Namespace: ns, Name: name, Owner: ownerOf(now, was)}
		if c.Kind == "" {
			c.Kind = kindOf(now)
		}
		if !ok {
			o.Created = append(o.Created, c)
			continue
		}
		mw, mn := objectMetaOf(was), objectMetaOf(now)
		if mw.GetResourceVersion() != mn.GetResourceVersion() {
			o.Changed[c.Kind]++
		}
		tw, tn := podTemplate(was), podTemplate(now)
		switch {
		case mw.GetUID() != mn.GetUID():
			o.Recreated = append(o.Recreated, c)
			if tw != nil {
				o.Restarted = append(o.Restarted, c)
			}
		case tw != nil && !equality.Semantic.DeepEqual(tw, tn):
			c.Field = "spec.template" + firstDifference(tw, tn)
			o.Restarted = append(o.Restarted, c)
		case resource == "configmaps" && dataChanged(was, now):
			c.Field = "data"
			c.Detail = describe(c.Field, was, now)
			o.Rewritten = append(o.Rewritten, c)
		}
	}
	for _, key := range sortedKeys(b) {
		if _, ok := a[key]; !ok {
			resource, ns, name := splitKey(key)
			o.Deleted = append(o.Deleted, Change{Kind: kinds[resource], Namespace: ns, Name: name, Owner: ownerOf(b[key])})
		}
	}
	expected := map[string]bool{}
	for _, x := range predicted {
		expected[x.Kind+" "+x.Namespace+"/"+x.Name] = true
	}
	for _, c := range o.Restarted {
		if k := c.Kind + " " + c.Namespace + "/" + c.Name; !expected[k] {
			o.Unpredicted = append(o.Unpredicted, k)
		}
	}
	// A workload deleted took its pods with it: worse than a restart, and
	// never predicted.
	for _, c := range o.Deleted {
		if c.Kind == "Deployment" || c.Kind == "StatefulSet" {
			o.Unpredicted = append(o.Unpredicted, c.Kind+" "+c.Namespace+"/"+c.Name+" (deleted)")
		}
	}
	return o
}

// objectsOf are a snapshot's objects by "<resource>/<namespace>/<name>",
// pods left out: the kubelet writes them, not an operator.
func objectsOf(s *snapshot) map[string]runtime.Object {
	out := map[string]runtime.Object{}
	for k, obj := range s.live {
		if !strings.HasPrefix(k, "pods/") {
			out[k] = obj
		}
	}
	for _, obj := range s.toolhive {
		m := objectMetaOf(obj)
		out[strings.ToLower(kindOf(obj))+"/"+m.GetNamespace()+"/"+m.GetName()] = obj
	}
	return out
}

func objectMetaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		return &metav1.ObjectMeta{}
	}
	return m
}

func splitKey(key string) (resource, ns, name string) {
	resource, rest, _ := strings.Cut(key, "/")
	ns, name, _ = strings.Cut(rest, "/")
	return resource, ns, name
}

// firstDifference is the path, from a and b, of the first field whose
// values differ, as ".spec.containers[0].env"; "" when none does.
func firstDifference(a, b any) string {
	var da, db any
	if ja, err := json.Marshal(a); err == nil {
		_ = json.Unmarshal(ja, &da)
	}
	if jb, err := json.Marshal(b); err == nil {
		_ = json.Unmarshal(jb, &db)
	}
	return diffPath(da, db)
}

func diffPath(a, b any) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return ""
		}
		keys := sortedKeys(av)
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			if !reflect.DeepEqual(av[k], bv[k]) {
				return "." + k + diffPath(av[k], bv[k])
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return ""
		}
		for i := range min(len(av), len(bv)) {
			if !reflect.DeepEqual(av[i], bv[i]) {
				return "[" + strconv.Itoa(i) + "]" + diffPath(av[i], bv[i])
			}
		}
	}
	return ""
}

// settle reads the watched namespaces every interval until nothing in
// them has changed for quiet (sameState), and returns the last read. It returns
// settled false at timeout.
func settle(ctx context.Context, c clients, namespaces []string, quiet, timeout, interval time.Duration) (*snapshot, bool, error) {
	deadline := time.Now().Add(timeout)
	last, err := ownedSnapshot(ctx, c.kube, c.toolhive, namespaces)
	if err != nil {
		return nil, false, err
	}
	since := time.Now()
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			return last, false, nil
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(interval):
		}
		cur, err := ownedSnapshot(ctx, c.kube, c.toolhive, namespaces)
		if err != nil {
			return nil, false, err
		}
		if !sameState(last, cur) {
			since = time.Now()
		}
		last = cur
	}
	return last, true, nil
}

// sameState reports whether nothing an operator's takeover writes differs
// between two reads: a child's spec and metadata, a custom resource's
// spec, metadata and the status an operator reports (phase, conditions).
// What changes on its own is left out, or the namespaces would never be
// quiet: Deployment and StatefulSet status (their controllers', as pods
// come and go), and the rest of a custom resource's status (vmcp reports
// its backends' health every 30 seconds, and the operator projects it).
func sameState(a, b *snapshot) bool {
	oa, ob := objectsOf(a), objectsOf(b)
	if len(oa) != len(ob) {
		return false
	}
	for k, x := range oa {
		y, ok := ob[k]
		if !ok || fingerprint(x) != fingerprint(y) {
			return false
		}
	}
	return true
}

// fingerprint is what sameState compares of obj.
func fingerprint(obj runtime.Object) string {
	m := objectMetaOf(obj)
	toolhive := isToolHive(obj)
	if podTemplate(obj) == nil && !toolhive {
		return m.GetResourceVersion()
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return m.GetResourceVersion()
	}
	parts := []any{m.GetGeneration(), m.GetLabels(), m.GetAnnotations(), m.GetFinalizers(), m.GetOwnerReferences(), u["spec"]}
	if status, ok := u["status"].(map[string]any); ok && toolhive {
		var conditions []string
		list, _ := status["conditions"].([]any)
		for _, c := range list {
			if c, ok := c.(map[string]any); ok {
				conditions = append(conditions, fmt.Sprint(c["type"], "=", c["status"], "/", c["reason"]))
			}
		}
		parts = append(parts, status["phase"], status["observedGeneration"], conditions)
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return m.GetResourceVersion()
	}
	return string(b)
}

// isToolHive reports whether obj is one of ToolHive's custom resources.
func isToolHive(obj runtime.Object) bool {
	gvks, _, err := thscheme.Scheme.ObjectKinds(obj)
	return err == nil && len(gvks) > 0 && gvks[0].Group == thv1.GroupName
}

// poll calls done every interval until it returns true or an error, or
// timeout passes; then the error says what was awaited and what was last
// seen. An error of done ends the wait as a failure, never as done: a
// read refused or failed proves nothing about what was awaited.
func poll(ctx context.Context, interval, timeout time.Duration, what string, done func(context.Context) (bool, string, error)) error {
	var seen string
	var failed error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, s, err := done(ctx)
		seen, failed = s, err
		return ok, err
	})
	switch {
	case failed != nil:
		return fmt.Errorf("waiting for %s: %w", what, failed)
	case err != nil && wait.Interrupted(err) && ctx.Err() == nil:
		if seen != "" {
			seen = ": " + seen
		}
		return fmt.Errorf("%s: not within %s%s", what, timeout, seen)
	}
	return err
}

// readError is a failed read of resource in ns ("" for a cluster-wide
// one) by verb, as a step reports it: a refusal (403) names the
// permission the plugin lacks, so that the step says what to grant.
func readError(err error, verb, resource, ns string) error {
	if err == nil {
		return nil
	}
	where := "cluster-wide"
	if ns != "" {
		where = "in namespace " + ns
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("missing permission: %s %s %s: %w", verb, resource, where, err)
	}
	return fmt.Errorf("%s %s %s: %w", verb, resource, where, err)
}

// scaleTo sets d's replicas and waits: for 0, until its pods are gone; for
// more, until one is ready.
func scaleTo(ctx context.Context, kube kubernetes.Interface, d *appsv1.Deployment, replicas int32, timeout, interval time.Duration) error {
	// A run stopped (it lost its record, or was interrupted) scales
	// nothing more.
	if err := ctx.Err(); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := kube.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("scaling Deployment %s/%s to %d: %w", d.Namespace, d.Name, replicas, err)
	}
	what := fmt.Sprintf("Deployment %s/%s scaled to %d", d.Namespace, d.Name, replicas)
	return poll(ctx, interval, timeout, what, func(ctx context.Context) (bool, string, error) {
		cur, err := kube.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, getOpts)
		if err != nil {
			return false, "", readError(err, "get", "deployments", d.Namespace)
		}
		st := cur.Status
		seen := fmt.Sprintf("%d replicas, %d ready", st.Replicas, st.ReadyReplicas)
		if st.ObservedGeneration < cur.Generation {
			return false, "its controller has not seen the change", nil
		}
		if replicas > 0 {
			return st.ReadyReplicas > 0, seen, nil
		}
		if st.Replicas > 0 {
			return false, seen, nil
		}
		// A terminating pod is no longer counted, but may still write.
		sel, err := metav1.LabelSelectorAsSelector(cur.Spec.Selector)
		if err != nil {
			return false, "", err
		}
		pods, err := kube.CoreV1().Pods(d.Namespace).List(ctx, listBy(sel.String()))
		if err != nil {
			return false, "", readError(err, "list", "pods", d.Namespace)
		}
		return len(pods.Items) == 0, fmt.Sprintf("%s still terminating", count(len(pods.Items), "pod", "pods")), nil
	})
}

// flagValue is the value of --name in args ("--name=v" or "--name v"),
// and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				return args[i+1], true
			}
			return "true", true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// controllerContainer is the index of hivekeeper's container in d.
func controllerContainer(d *appsv1.Deployment) int {
	if i := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "controller" }); i >= 0 {
		return i
	}
	return 0
}

// waitLeader waits until one of hivekeeper's pods holds its leader Lease,
// when it elects one: until then, no replica writes.
func waitLeader(ctx context.Context, kube kubernetes.Interface, hk *appsv1.Deployment, timeout, interval time.Duration) error {
	args := hk.Spec.Template.Spec.Containers[controllerContainer(hk)].Args
	if v, ok := flagValue(args, "leader-elect"); !ok || v == "false" {
		return nil
	}
	id, ok := flagValue(args, "leader-elect-id")
	if !ok {
		id = "hivekeeper-leader"
	}
	ns, ok := flagValue(args, "leader-elect-namespace")
	if !ok {
		ns = hk.Namespace
	}
	sel, err := metav1.LabelSelectorAsSelector(hk.Spec.Selector)
	if err != nil {
		return err
	}
	return poll(ctx, interval, timeout, fmt.Sprintf("a hivekeeper pod leading on Lease %s/%s", ns, id), func(ctx context.Context) (bool, string, error) {
		lease, err := kube.CoordinationV1().Leases(ns).Get(ctx, id, getOpts)
		if apierrors.IsNotFound(err) {
			return false, "no Lease yet", nil
		}
		if err != nil {
			return false, "", readError(err, "get", "leases.coordination.k8s.io", ns)
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		if holder == "" {
			return false, "no holder", nil
		}
		// The identity is the pod's name, "_", and a UUID per process.
		pod, _, _ := strings.Cut(holder, "_")
		pods, err := kube.CoreV1().Pods(hk.Namespace).List(ctx, listBy(sel.String()))
		if err != nil {
			return false, "", readError(err, "list", "pods", hk.Namespace)
		}
		held := slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.Name == pod && p.DeletionTimestamp == nil })
		return held, "held by " + holder + ", not one of the Deployment's pods", nil
	})
}

// pullFailures are the reasons a container waits on an image that will
// not come, or a pod that will not start. ErrImagePull is not one: a
// first failed pull may be the registry's moment, and the kubelet tries
// again; it reports ImagePullBackOff once a pull failed and it waits
// before the next.
var pullFailures = []string{"ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError"}

// pullCheck runs hivekeeper's image, with its Deployment's pull secrets,
// account, placement and security context, as `--version`, and waits
// until the container started: proof that the image pulls where
// hivekeeper's pods will run, before ToolHive's operator is stopped.
func pullCheck(ctx context.Context, kube kubernetes.Interface, hk *appsv1.Deployment, timeout, interval time.Duration) error {
	tpl := hk.Spec.Template.Spec
	c := tpl.Containers[controllerContainer(hk)]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: hk.Namespace, GenerateName: hk.Name + "-pull-check-",
			// Not the Deployment's selector: its ReplicaSet must not adopt it.
			Labels: map[string]string{"app.kubernetes.io/part-of": "hivekeeper", "app.kubernetes.io/component": "pull-check"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ServiceAccountName:           tpl.ServiceAccountName,
			AutomountServiceAccountToken: ptr.To(false),
			ImagePullSecrets:             tpl.ImagePullSecrets,
			NodeSelector:                 tpl.NodeSelector,
			Affinity:                     tpl.Affinity,
			Tolerations:                  tpl.Tolerations,
			PriorityClassName:            tpl.PriorityClassName,
			SecurityContext:              tpl.SecurityContext,
			Containers: []corev1.Container{{Name: "pull-check", Image: c.Image, ImagePullPolicy: c.ImagePullPolicy,
				Command: c.Command, Args: []string{"--version"}, SecurityContext: c.SecurityContext, Resources: c.Resources}},
		},
	}
	created, err := kube.CoreV1().Pods(hk.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("starting a pod with hivekeeper's image: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = kube.CoreV1().Pods(hk.Namespace).Delete(dctx, created.Name, metav1.DeleteOptions{})
	}()
	what := fmt.Sprintf("pod %s/%s with hivekeeper's image %s started", hk.Namespace, created.Name, c.Image)
	return poll(ctx, interval, timeout, what, func(ctx context.Context) (bool, string, error) {
		p, err := kube.CoreV1().Pods(hk.Namespace).Get(ctx, created.Name, getOpts)
		if err != nil {
			return false, "", readError(err, "get", "pods", hk.Namespace)
		}
		if p.Status.Phase == corev1.PodSucceeded {
			return true, "", nil
		}
		for _, s := range p.Status.ContainerStatuses {
			switch {
			case s.State.Running != nil:
				return true, "", nil
			case s.State.Terminated != nil && s.State.Terminated.ExitCode == 0:
				return true, "", nil
			case s.State.Terminated != nil:
				return false, "", fmt.Errorf("hivekeeper's image %s ran and failed (exit %d: %s): see kubectl logs -n %s %s",
					c.Image, s.State.Terminated.ExitCode, s.State.Terminated.Reason, hk.Namespace, created.Name)
			case s.State.Waiting != nil && slices.Contains(pullFailures, s.State.Waiting.Reason):
				return false, "", fmt.Errorf("hivekeeper's image %s does not start on node %q: %s: %s; ToolHive's operator was not stopped",
					c.Image, p.Spec.NodeName, s.State.Waiting.Reason, s.State.Waiting.Message)
			}
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, "", fmt.Errorf("the pod with hivekeeper's image failed: %s", p.Status.Message)
		}
		return false, "phase " + string(p.Status.Phase), nil
	})
}

// hivekeeperCRDs are the CRDs hivekeeper serves, as its chart ships them.
func hivekeeperCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crdyaml.FS, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := crdyaml.FS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, c); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// toolhiveCRDs are the cluster's toolhive.stacklok.dev CRDs, as switch
// --back puts them back: name, labels, annotations and spec.
func toolhiveCRDs(ctx context.Context, client apiextensionsclient.Interface) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	list, err := listToolhiveCRDs(ctx, client)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, c := range list {
		out = append(out, &apiextensionsv1.CustomResourceDefinition{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: c.Labels, Annotations: c.Annotations},
			Spec:       c.Spec,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// unservedAfterBack lists the kinds whose objects may be stored in a
// version the recorded CRDs do not serve: the API server refuses such a
// CRD, and the objects would be unreadable.
func unservedAfterBack(ctx context.Context, client apiextensionsclient.Interface, recorded []*apiextensionsv1.CustomResourceDefinition) ([]string, error) {
	var problems []string
	for _, r := range recorded {
		cur, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, r.Name, getOpts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, v := range cur.Status.StoredVersions {
			if !slices.ContainsFunc(r.Spec.Versions, func(x apiextensionsv1.CustomResourceDefinitionVersion) bool { return x.Name == v && x.Served }) {
				problems = append(problems, fmt.Sprintf("%s: objects may be stored as %s, which ToolHive's recorded CRD does not serve", r.Name, v))
			}
		}
	}
	return problems, nil
}

// replaceCRDs puts crds in place, each spec whole: an update, not an
// apply, so that no field of the schema being replaced survives under
// another field manager. Labels and annotations are merged, the
// cluster's kept. It waits until every served version of each is served.
func replaceCRDs(ctx context.Context, c clients, crds []*apiextensionsv1.CustomResourceDefinition, timeout, interval time.Duration) error {
	api := c.crds.ApiextensionsV1().CustomResourceDefinitions()
	for _, want := range crds {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := api.Get(ctx, want.Name, getOpts)
			if apierrors.IsNotFound(err) {
				fresh := want.DeepCopy()
				fresh.ResourceVersion, fresh.UID = "", ""
				_, err = api.Create(ctx, fresh, metav1.CreateOptions{FieldManager: fieldManager})
				return err
			}
			if err != nil {
				return err
			}
			next := cur.DeepCopy()
			next.Spec = want.Spec
			next.Labels = mergeMaps(cur.Labels, want.Labels)
			next.Annotations = mergeMaps(cur.Annotations, want.Annotations)
			if equality.Semantic.DeepEqual(cur, next) {
				return nil
			}
			_, err = api.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
			return err
		})
		if err != nil {
			return fmt.Errorf("replacing CRD %s: %w", want.Name, err)
		}
	}
	for _, want := range crds {
		err := poll(ctx, interval, timeout, "CRD "+want.Name+" established", func(ctx context.Context) (bool, string, error) {
			cur, err := api.Get(ctx, want.Name, getOpts)
			if err != nil {
				return false, "", readError(err, "get", "customresourcedefinitions.apiextensions.k8s.io", "")
			}
			if !established(cur) {
				return false, "not Established", nil
			}
			for _, v := range cur.Spec.Versions {
				if !v.Served {
					continue
				}
				gvr := schema.GroupVersionResource{Group: cur.Spec.Group, Version: v.Name, Resource: cur.Spec.Names.Plural}
				_, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
				if apierrors.IsForbidden(err) {
					return false, "", readError(err, "list", gvr.GroupResource().String(), "")
				}
				if err != nil {
					return false, fmt.Sprintf("%s not served yet: %v", gvr, err), nil
				}
			}
			return true, "", nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func established(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// mergeMaps is base with over's entries on top, base itself when both
// are empty (an update then leaves the field as it was).
func mergeMaps(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return base
	}
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

// annotationSetAside keeps, on hivekeeper's admission policy binding, the
// validation actions switch --back replaced with Warn, for the next
// switch to put back.
const annotationSetAside = "hivekeeper/validation-actions"

// policyBindings are the admission policy bindings of hivekeeper's
// release: the chart's labels with the Deployment's instance.
func policyBindings(ctx context.Context, kube kubernetes.Interface, hk *appsv1.Deployment) ([]string, error) {
	sel := "app.kubernetes.io/part-of=hivekeeper"
	if inst := hk.Labels[labelInstance]; inst != "" {
		sel += "," + labelInstance + "=" + inst
	}
	list, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, listBy(sel))
	if err != nil {
		return nil, fmt.Errorf("reading hivekeeper's admission policy bindings: %w", err)
	}
	var names []string
	for _, b := range list.Items {
		names = append(names, b.Name)
	}
	return names, nil
}

// editPolicy patches each of hivekeeper's admission policy bindings with
// what edit returns for it (nothing when it returns nil), and returns how
// many it patched.
func editPolicy(ctx context.Context, kube kubernetes.Interface, hk *appsv1.Deployment, edit func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (map[string]any, error)) (int, error) {
	names, err := policyBindings(ctx, kube, hk)
	if err != nil {
		return 0, err
	}
	n := 0
	api := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	for _, name := range names {
		b, err := api.Get(ctx, name, getOpts)
		if err != nil {
			return n, err
		}
		patch, err := edit(b)
		if err != nil {
			return n, err
		}
		if patch == nil {
			continue
		}
		raw, err := json.Marshal(patch)
		if err != nil {
			return n, err
		}
		if _, err := api.Patch(ctx, name, types.MergePatchType, raw, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return n, fmt.Errorf("patching admission policy binding %s: %w", name, err)
		}
		n++
	}
	return n, nil
}

// warnOnlyPolicy sets hivekeeper's admission policy to warn: once ToolHive's
// operator runs the workloads again, hivekeeper's rules are no longer the
// cluster's. The actions replaced are kept on the binding.
func warnOnlyPolicy(ctx context.Context, kube kubernetes.Interface, hk *appsv1.Deployment) (int, error) {
	return editPolicy(ctx, kube, hk, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (map[string]any, error) {
		if slices.Equal(actions(b.Spec.ValidationActions), []string{"Warn"}) {
			return nil, nil
		}
		was, err := json.Marshal(actions(b.Spec.ValidationActions))
		return map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{annotationSetAside: string(was)}},
			"spec":     map[string]any{"validationActions": []string{"Warn"}},
		}, err
	})
}

// restorePolicy puts back the validation actions warnOnlyPolicy set aside.
func restorePolicy(ctx context.Context, kube kubernetes.Interface, hk *appsv1.Deployment) (int, error) {
	return editPolicy(ctx, kube, hk, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (map[string]any, error) {
		saved, ok := b.Annotations[annotationSetAside]
		if !ok {
			return nil, nil
		}
		var was []string
		if err := json.Unmarshal([]byte(saved), &was); err != nil || len(was) == 0 {
			return nil, errors.Join(fmt.Errorf("admission policy binding %s: annotation %s is not a list of actions: %q", b.Name, annotationSetAside, saved), err)
		}
		return map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{annotationSetAside: nil}},
			"spec":     map[string]any{"validationActions": was},
		}, nil
	})
}

func actions[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = string(a)
	}
	return out
}

// releaseFinalizers removes, from every composite tool definition in
// namespaces (every namespace when empty), the finalizer hivekeeper puts
// there: ToolHive's operator holds none on that kind and never releases
// it, so left on after switch --back it would keep the object from ever
// being deleted. It returns how many it released. hivekeeper, scaled to
// 0, writes nothing meanwhile; a conflict is an error, and switch --back
// can be run again.
func releaseFinalizers(ctx context.Context, th versioned.Interface, namespaces []string) (int, error) {
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	n := 0
	for _, ns := range scopes {
		list, err := th.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return n, fmt.Errorf("listing composite tool definitions: %w", err)
		}
		for _, d := range list.Items {
			if !slices.Contains(d.Finalizers, thv1.VirtualMCPCompositeToolDefinitionFinalizer) {
				continue
			}
			keep := slices.DeleteFunc(slices.Clone(d.Finalizers), func(f string) bool { return f == thv1.VirtualMCPCompositeToolDefinitionFinalizer })
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": d.ResourceVersion}})
			if err != nil {
				return n, err
			}
			if _, err := th.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
				return n, fmt.Errorf("releasing hivekeeper's finalizer of composite tool definition %s/%s: %w", d.Namespace, d.Name, err)
			}
			n++
		}
	}
	return n, nil
}

// hivekeeperBindings are the RoleBindings in namespaces (every namespace
// when empty) that a ToolHive custom resource controls and that bind a
// ClusterRole: hivekeeper's runner bindings. ToolHive's operator binds
// each of its accounts to a Role of the binding's own name, and never
// changes the roleRef of a binding that exists (it cannot change in
// place), so one of these left behind keeps hivekeeper's grants, not
// ToolHive's, under ToolHive's operator.
func hivekeeperBindings(ctx context.Context, kube kubernetes.Interface, namespaces []string) ([]*rbacv1.RoleBinding, error) {
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	var out []*rbacv1.RoleBinding
	for _, ns := range scopes {
		items, err := listPaged(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return kube.RbacV1().RoleBindings(ns).List(ctx, o)
		})
		if err != nil {
			return nil, readError(err, "list", "rolebindings.rbac.authorization.k8s.io", ns)
		}
		for _, o := range items {
			b, ok := o.(*rbacv1.RoleBinding)
			if !ok || b.RoleRef.Kind != "ClusterRole" {
				continue
			}
			if ref := metav1.GetControllerOf(b); ref != nil && strings.HasPrefix(ref.APIVersion, thv1.GroupName+"/") {
				out = append(out, b)
			}
		}
	}
	return out, nil
}

// releaseRunnerBindings hands hivekeeper's runner bindings (see
// hivekeeperBindings) back to ToolHive's Roles: each whose Role of the
// binding's name is there (hivekeeper leaves ToolHive's Roles alone) is
// deleted and created again as it was, but bound to that Role: ToolHive's
// binding, at once. One without such a Role (a workload ToolHive's
// operator never set up, as one it waits on) is left as it is, its
// account keeping hivekeeper's grants. It returns the bindings rebound
// and those left, as "namespace/name".
func releaseRunnerBindings(ctx context.Context, kube kubernetes.Interface, namespaces []string) (rebound, left []string, err error) {
	bindings, err := hivekeeperBindings(ctx, kube, namespaces)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range bindings {
		at := b.Namespace + "/" + b.Name
		_, err := kube.RbacV1().Roles(b.Namespace).Get(ctx, b.Name, getOpts)
		if apierrors.IsNotFound(err) {
			left = append(left, at)
			continue
		}
		if err != nil {
			return rebound, left, readError(err, "get", "roles.rbac.authorization.k8s.io", b.Namespace)
		}
		pre := metav1.Preconditions{UID: &b.UID, ResourceVersion: &b.ResourceVersion}
		err = kube.RbacV1().RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &pre})
		if err != nil && !apierrors.IsNotFound(err) {
			return rebound, left, fmt.Errorf("deleting hivekeeper's runner RoleBinding %s: %w", at, err)
		}
		back := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name, Labels: b.Labels,
			Annotations: b.Annotations, OwnerReferences: b.OwnerReferences}, Subjects: b.Subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: b.Name}}
		if _, err := kube.RbacV1().RoleBindings(b.Namespace).Create(ctx, back, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return rebound, left, fmt.Errorf("binding runner RoleBinding %s to ToolHive's Role %s again: %w", at, b.Name, err)
		}
		rebound = append(rebound, at)
	}
	return rebound, left, nil
}

// runnerBindingsBack checks that ToolHive's operator created again each
// binding released (names, "namespace/name") with a Role, so that the
// runners have ToolHive's grants again. One not created again is
// returned (ToolHive's operator may refuse its workload before it writes
// RBAC); one that binds a ClusterRole again is an error: something other
// than ToolHive's operator wrote it.
func runnerBindingsBack(ctx context.Context, kube kubernetes.Interface, names []string) (missing []string, err error) {
	var wrong []string
	for _, n := range names {
		ns, name, _ := strings.Cut(n, "/")
		b, err := kube.RbacV1().RoleBindings(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, n)
		case err != nil:
			return nil, readError(err, "get", "rolebindings.rbac.authorization.k8s.io", ns)
		case b.RoleRef.Kind != "Role":
			wrong = append(wrong, n+" binds "+b.RoleRef.Kind+" "+b.RoleRef.Name)
		}
	}
	if len(wrong) > 0 {
		return missing, fmt.Errorf("runner RoleBindings bind a ClusterRole again after ToolHive's operator took over: %s", strings.Join(wrong, ", "))
	}
	return missing, nil
}
