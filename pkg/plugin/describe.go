package plugin

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxValue is how much of a value a detail quotes.
const maxValue = 80

// describe shows, for a drift field of a child, what differs between the
// live child and the one hivekeeper leaves: the key, container or
// variable, and both values where they are short. It returns "" for a
// field it has nothing short to say about.
func describe(field string, live, final runtime.Object) string {
	if live == nil || final == nil {
		return ""
	}
	if key, ok := bracketKey(field); ok {
		lm, fm := objectMeta(live), objectMeta(final)
		if lm != nil && fm != nil {
			return valueChange(key, lookup(lm.Annotations, key), lookup(fm.Annotations, key))
		}
	}
	switch field {
	case "metadata.labels", "metadata.annotations":
		lm, fm := objectMeta(live), objectMeta(final)
		if lm == nil || fm == nil {
			return ""
		}
		if field == "metadata.labels" {
			return mapChange(lm.Labels, fm.Labels)
		}
		return mapChange(lm.Annotations, fm.Annotations)
	case "data":
		return keysChange(configMapData(live), configMapData(final))
	case "roleRef":
		l, lok := live.(*rbacv1.RoleBinding)
		f, fok := final.(*rbacv1.RoleBinding)
		if lok && fok {
			return fmt.Sprintf("%s/%s → %s/%s", l.RoleRef.Kind, l.RoleRef.Name, f.RoleRef.Kind, f.RoleRef.Name)
		}
		return ""
	}
	lt, ft := podTemplate(live), podTemplate(final)
	if lt == nil || ft == nil {
		return ""
	}
	switch field {
	case "spec.template.metadata.annotations":
		return mapChange(lt.Annotations, ft.Annotations)
	case "spec.template.metadata.labels":
		return mapChange(lt.Labels, ft.Labels)
	case "spec.template.spec.serviceAccountName":
		return valueChange("", &lt.Spec.ServiceAccountName, &ft.Spec.ServiceAccountName)
	case "spec.template.spec.volumes":
		return namedChange("volume", names(lt.Spec.Volumes, func(v corev1.Volume) string { return v.Name }),
			names(ft.Spec.Volumes, func(v corev1.Volume) string { return v.Name }))
	case "spec.template.spec.imagePullSecrets":
		n := func(r corev1.LocalObjectReference) string { return r.Name }
		return fmt.Sprintf("%v → %v", names(lt.Spec.ImagePullSecrets, n), names(ft.Spec.ImagePullSecrets, n))
	}
	if what, ok := strings.CutPrefix(field, "spec.template.spec.containers."); ok {
		return containerChange(what, lt.Spec.Containers, ft.Spec.Containers)
	}
	return ""
}

// containerChange shows field what of the first container whose value of
// it differs between live and final.
func containerChange(what string, live, final []corev1.Container) string {
	for _, fc := range final {
		i := slices.IndexFunc(live, func(c corev1.Container) bool { return c.Name == fc.Name })
		if i < 0 {
			continue
		}
		lc := live[i]
		prefix := "container " + fc.Name + ": "
		switch what {
		case "image":
			if lc.Image != fc.Image {
				return prefix + valueChange("image", &lc.Image, &fc.Image)
			}
		case "env":
			if d := envChange(lc.Env, fc.Env); d != "" {
				return prefix + d
			}
		case "args":
			if !equality.Semantic.DeepEqual(lc.Args, fc.Args) {
				return prefix + listChange("args", lc.Args, fc.Args)
			}
		case "command":
			if !equality.Semantic.DeepEqual(lc.Command, fc.Command) {
				return prefix + listChange("command", lc.Command, fc.Command)
			}
		case "volumeMounts":
			n := func(m corev1.VolumeMount) string { return m.Name + ":" + m.MountPath }
			if d := namedChange("mount", names(lc.VolumeMounts, n), names(fc.VolumeMounts, n)); d != "" {
				return prefix + d
			}
		default:
			return "container " + fc.Name
		}
	}
	return ""
}

// envChange names the first variable added, removed or changed.
func envChange(live, final []corev1.EnvVar) string {
	find := func(env []corev1.EnvVar, name string) *corev1.EnvVar {
		i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 {
			return nil
		}
		return &env[i]
	}
	for _, f := range final {
		l := find(live, f.Name)
		switch {
		case l == nil:
			return "env " + f.Name + " added" + quoted(" = ", f.Value)
		case l.Value != f.Value:
			return valueChange("env "+f.Name, &l.Value, &f.Value)
		case (l.ValueFrom == nil) != (f.ValueFrom == nil):
			return "env " + f.Name + " now from a reference"
		}
	}
	for _, l := range live {
		if find(final, l.Name) == nil {
			return "env " + l.Name + " removed"
		}
	}
	return ""
}

func valueChange(what string, from, to *string) string {
	show := func(p *string) string {
		if p == nil {
			return "(none)"
		}
		return truncate(fmt.Sprintf("%q", *p))
	}
	if what != "" {
		what += ": "
	}
	return what + show(from) + " → " + show(to)
}

func quoted(sep, v string) string {
	if v == "" {
		return ""
	}
	return sep + truncate(fmt.Sprintf("%q", v))
}

func listChange(what string, from, to []string) string {
	return what + ": " + truncate(fmt.Sprintf("%q", from)) + " → " + truncate(fmt.Sprintf("%q", to))
}

// mapChange shows the first key, in order, whose value final sets
// otherwise than live (keys only live has are others' and not compared).
func mapChange(live, final map[string]string) string {
	for _, k := range sortedKeys(final) {
		if lv, ok := live[k]; !ok || lv != final[k] {
			return valueChange(k, lookup(live, k), lookup(final, k))
		}
	}
	return ""
}

// keysChange names the keys whose values differ.
func keysChange(live, final map[string]string) string {
	var changed []string
	for _, k := range sortedKeys(union(live, final)) {
		lv, lok := live[k]
		fv, fok := final[k]
		switch {
		case !lok:
			changed = append(changed, k+" added")
		case !fok:
			changed = append(changed, k+" removed")
		case lv != fv:
			changed = append(changed, k+" changed")
		}
	}
	return strings.Join(changed, ", ")
}

// namedChange names the first entry added or removed, or changed when the
// names are the same.
func namedChange(what string, live, final []string) string {
	for _, n := range final {
		if !slices.Contains(live, n) {
			return what + " " + n + " added"
		}
	}
	for _, n := range live {
		if !slices.Contains(final, n) {
			return what + " " + n + " removed"
		}
	}
	if !reflect.DeepEqual(live, final) {
		return what + "s reordered"
	}
	return what + "s changed"
}

func names[T any](items []T, name func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}

func lookup(m map[string]string, k string) *string {
	if v, ok := m[k]; ok {
		return &v
	}
	return nil
}

func union(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// bracketKey is the key of a field "metadata.annotations[<key>]".
func bracketKey(field string) (string, bool) {
	rest, ok := strings.CutPrefix(field, "metadata.annotations[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return "", false
	}
	return strings.TrimSuffix(rest, "]"), true
}

func truncate(s string) string {
	if len(s) <= maxValue {
		return s
	}
	return s[:maxValue-1] + "…"
}

func objectMeta(o runtime.Object) *metav1.ObjectMeta {
	switch o := o.(type) {
	case *appsv1.Deployment:
		return &o.ObjectMeta
	case *appsv1.StatefulSet:
		return &o.ObjectMeta
	case *corev1.ConfigMap:
		return &o.ObjectMeta
	case *corev1.Service:
		return &o.ObjectMeta
	case *corev1.ServiceAccount:
		return &o.ObjectMeta
	case *rbacv1.RoleBinding:
		return &o.ObjectMeta
	}
	return nil
}

func podTemplate(o runtime.Object) *corev1.PodTemplateSpec {
	switch o := o.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	}
	return nil
}

func configMapData(o runtime.Object) map[string]string {
	if cm, ok := o.(*corev1.ConfigMap); ok {
		return cm.Data
	}
	return nil
}
