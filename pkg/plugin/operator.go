package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Operator is ToolHive's operator as preflight found it.
type Operator struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Container is the container whose environment holds the settings.
	Container string `json:"container"`
	Image     string `json:"image"`
	// Release is ToolHive's release, from the image's tag or the
	// Deployment's app.kubernetes.io/version label; empty when neither
	// says.
	Release  string `json:"release,omitempty"`
	Replicas int32  `json:"replicas"`
	// Owners are the tools that install and keep the Deployment: a Helm
	// release, an Argo CD Application, a Flux HelmRelease or
	// Kustomization.
	Owners []Owner `json:"owners,omitempty"`
	// Env is the container's environment, resolved where preflight may
	// read it.
	Env []EnvVar `json:"env"`
}

// Owner is a tool that installs or keeps the operator's Deployment, read
// from the labels and annotations it leaves there.
type Owner struct {
	// Kind is "Helm release", "Argo CD Application", "Flux HelmRelease" or
	// "Flux Kustomization".
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Chart is the Helm chart and its version (helm.sh/chart).
	Chart string `json:"chart,omitempty"`
	// Via is the label or annotation it was read from.
	Via string `json:"via"`
}

// EnvVar is one variable of the operator's environment.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
	// From names where a value not written in the Deployment comes from.
	From string `json:"from,omitempty"`
	// Unread is set when preflight did not read the value: it is in a
	// Secret (preflight reads none) or is the pod's own.
	Unread bool `json:"unread,omitempty"`
}

// Labels and annotations the installing tools leave on what they apply.
const (
	labelManagedBy          = "app.kubernetes.io/managed-by"
	labelInstance           = "app.kubernetes.io/instance"
	labelVersion            = "app.kubernetes.io/version"
	labelHelmChart          = "helm.sh/chart"
	annotationHelmRelease   = "meta.helm.sh/release-name"
	annotationHelmNamespace = "meta.helm.sh/release-namespace"
	labelArgoInstance       = "argocd.argoproj.io/instance"
	annotationArgoTracking  = "argocd.argoproj.io/tracking-id"
	labelFluxHelmName       = "helm.toolkit.fluxcd.io/name"
	labelFluxHelmNamespace  = "helm.toolkit.fluxcd.io/namespace"
	labelFluxKustomizeName  = "kustomize.toolkit.fluxcd.io/name"
	labelFluxKustomizeNS    = "kustomize.toolkit.fluxcd.io/namespace"
)

// operatorVariable is a variable only ToolHive's operator reads: a
// container that has it is the operator's, whatever registry its image
// was mirrored to.
const operatorVariable = "TOOLHIVE_RUNNER_IMAGE"

// findOperator finds ToolHive's operator: the Deployment named name in
// namespace when name is set, else every Deployment (of namespace, or of
// every namespace when it is empty) with a container that is the
// operator's. It returns nil when there is none, and an error when there
// are several and name does not choose.
func findOperator(ctx context.Context, kube kubernetes.Interface, namespace, name string) (*Operator, error) {
	var candidates []appsv1.Deployment
	if name != "" {
		if namespace == "" {
			return nil, usageError("--operator needs the operator's namespace (-n)")
		}
		d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading ToolHive's operator: %w", err)
		}
		if operatorContainer(d) < 0 {
			return nil, fmt.Errorf("Deployment %s/%s runs no ToolHive operator: no container has %s or an operator image", namespace, name, operatorVariable)
		}
		candidates = append(candidates, *d)
	} else {
		list, err := kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("looking for ToolHive's operator: %w", err)
		}
		for _, d := range list.Items {
			if operatorContainer(&d) >= 0 {
				candidates = append(candidates, d)
			}
		}
	}
	switch len(candidates) {
	case 0:
		return nil, nil
	case 1:
	default:
		var names []string
		for _, d := range candidates {
			names = append(names, d.Namespace+"/"+d.Name)
		}
		return nil, usageError("%d Deployments run ToolHive's operator (%s): choose one with -n and --operator", len(names), strings.Join(names, ", "))
	}
	d := &candidates[0]
	c := &d.Spec.Template.Spec.Containers[operatorContainer(d)]
	op := &Operator{Namespace: d.Namespace, Name: d.Name, Container: c.Name, Image: c.Image,
		Release: imageTag(c.Image), Replicas: ptr.Deref(d.Spec.Replicas, 1), Owners: owners(d)}
	if op.Release == "" {
		op.Release = d.Labels[labelVersion]
	}
	env, err := resolveEnv(ctx, kube, d.Namespace, c)
	if err != nil {
		return nil, err
	}
	op.Env = env
	return op, nil
}

// operatorContainer is the index of the operator's container in d, -1
// when d runs no operator.
func operatorContainer(d *appsv1.Deployment) int {
	return slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
		if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == operatorVariable }) {
			return true
		}
		repo, _, _ := strings.Cut(c.Image, "@")
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i]
		}
		return strings.HasSuffix(repo, "toolhive/operator") || strings.HasSuffix(repo, "/thv-operator")
	})
}

// imageTag is the tag of an image reference, "" when it has none.
func imageTag(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || i < strings.LastIndex(ref, "/") {
		return ""
	}
	return ref[i+1:]
}

// owners reads which tools install and keep d (the operator's Deployment,
// a CRD) from their marks on it.
// A Helm release is known by the annotations `helm install` and `helm
// upgrade` write; a chart rendered by another tool (Argo CD renders with
// `helm template`) carries Helm's labels without them. Argo CD marks what
// it applies with a tracking annotation, or with a label naming the
// Application: argocd.argoproj.io/instance, or by default
// app.kubernetes.io/instance, which is then the only trace of it.
func owners(d metav1.Object) []Owner {
	l, a := d.GetLabels(), d.GetAnnotations()
	var out []Owner
	helm := a[annotationHelmRelease] != ""
	if helm {
		o := Owner{Kind: "Helm release", Name: a[annotationHelmRelease], Namespace: a[annotationHelmNamespace], Chart: l[labelHelmChart], Via: annotationHelmRelease}
		if o.Namespace == "" {
			o.Namespace = d.GetNamespace()
		}
		out = append(out, o)
	}
	flux := l[labelFluxHelmName] != "" || l[labelFluxKustomizeName] != ""
	switch {
	case a[annotationArgoTracking] != "":
		app, _, _ := strings.Cut(a[annotationArgoTracking], ":")
		out = append(out, argoOwner(app, annotationArgoTracking))
	case l[labelArgoInstance] != "":
		out = append(out, argoOwner(l[labelArgoInstance], labelArgoInstance))
	case !helm && !flux && l[labelInstance] != "":
		out = append(out, argoOwner(l[labelInstance], labelInstance))
	}
	if n := l[labelFluxHelmName]; n != "" {
		out = append(out, Owner{Kind: "Flux HelmRelease", Name: n, Namespace: l[labelFluxHelmNamespace], Via: labelFluxHelmName})
	}
	if n := l[labelFluxKustomizeName]; n != "" {
		out = append(out, Owner{Kind: "Flux Kustomization", Name: n, Namespace: l[labelFluxKustomizeNS], Via: labelFluxKustomizeName})
	}
	return out
}

// argoOwner is the Application an Argo CD tracking value names: "name",
// or "namespace_name" for an Application outside Argo CD's namespace.
func argoOwner(app, via string) Owner {
	o := Owner{Kind: "Argo CD Application", Name: app, Via: via}
	if ns, name, ok := strings.Cut(app, "_"); ok {
		o.Namespace, o.Name = ns, name
	}
	return o
}

// resolveEnv is c's environment as the kubelet would give it, envFrom
// first and env after (a later entry of a name wins), with values read
// from ConfigMaps. Values in Secrets are not read: the variable is listed
// with where its value is, and Unread.
func resolveEnv(ctx context.Context, kube kubernetes.Interface, namespace string, c *corev1.Container) ([]EnvVar, error) {
	var out []EnvVar
	set := func(v EnvVar) {
		if i := slices.IndexFunc(out, func(e EnvVar) bool { return e.Name == v.Name }); i >= 0 {
			out = slices.Delete(out, i, i+1)
		}
		out = append(out, v)
	}
	configMaps := map[string]*corev1.ConfigMap{}
	configMap := func(name string, optional *bool) (*corev1.ConfigMap, error) {
		if cm, ok := configMaps[name]; ok {
			return cm, nil
		}
		cm, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
			cm, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s/%s of the operator's environment: %w", namespace, name, err)
		}
		configMaps[name] = cm
		return cm, nil
	}
	for _, src := range c.EnvFrom {
		switch {
		case src.ConfigMapRef != nil:
			cm, err := configMap(src.ConfigMapRef.Name, src.ConfigMapRef.Optional)
			if err != nil {
				return nil, err
			}
			if cm == nil {
				continue
			}
			for _, k := range sortedKeys(cm.Data) {
				set(EnvVar{Name: src.Prefix + k, Value: cm.Data[k], From: "ConfigMap " + cm.Name})
			}
		case src.SecretRef != nil:
			// Its variables cannot be named without reading the Secret.
			set(EnvVar{Name: src.Prefix + "*", From: "Secret " + src.SecretRef.Name, Unread: true})
		}
	}
	for _, e := range c.Env {
		v := EnvVar{Name: e.Name, Value: e.Value}
		switch f := e.ValueFrom; {
		case f == nil:
		case f.ConfigMapKeyRef != nil:
			v.From = "ConfigMap " + f.ConfigMapKeyRef.Name + " key " + f.ConfigMapKeyRef.Key
			cm, err := configMap(f.ConfigMapKeyRef.Name, f.ConfigMapKeyRef.Optional)
			if err != nil {
				return nil, err
			}
			if cm == nil {
				continue
			}
			val, ok := cm.Data[f.ConfigMapKeyRef.Key]
			if !ok && !ptr.Deref(f.ConfigMapKeyRef.Optional, false) {
				return nil, fmt.Errorf("the operator's %s names key %s of ConfigMap %s/%s, which it does not have", e.Name, f.ConfigMapKeyRef.Key, namespace, cm.Name)
			}
			if !ok {
				continue
			}
			v.Value = val
		case f.SecretKeyRef != nil:
			v.From, v.Unread = "Secret "+f.SecretKeyRef.Name+" key "+f.SecretKeyRef.Key, true
		case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace":
			v.From, v.Value = "the pod's namespace", namespace
		case f.FieldRef != nil:
			v.From, v.Unread = "the pod's "+f.FieldRef.FieldPath, true
		case f.ResourceFieldRef != nil:
			v.From, v.Unread = "the container's "+f.ResourceFieldRef.Resource, true
		}
		set(v)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
