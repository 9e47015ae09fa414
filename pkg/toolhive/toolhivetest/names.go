package toolhivetest

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// NameProblems returns what the API server would refuse in the names and
// labels of objs: a Service name must be a DNS-1035 label, any other name a
// DNS-1123 subdomain, and every label value (of the object, and of a
// Deployment's selector and pod template) at most 63 characters.
func NameProblems(objs ...metav1.Object) []string {
	var out []string
	report := func(what string, errs []string) {
		for _, e := range errs {
			out = append(out, what+": "+e)
		}
	}
	labels := func(what string, m map[string]string) {
		for k, v := range m {
			report(fmt.Sprintf("%s label %s=%q", what, k, v), validation.IsValidLabelValue(v))
		}
	}
	for _, o := range objs {
		what := fmt.Sprintf("%T %s", o, o.GetName())
		switch obj := o.(type) {
		case *corev1.Service:
			report(what, validation.IsDNS1035Label(obj.Name))
		case *appsv1.Deployment:
			report(what, validation.IsDNS1123Subdomain(obj.Name))
			labels(what+" template", obj.Spec.Template.Labels)
			if obj.Spec.Selector != nil {
				labels(what+" selector", obj.Spec.Selector.MatchLabels)
			}
		default:
			report(what, validation.IsDNS1123Subdomain(o.GetName()))
		}
		labels(what, o.GetLabels())
	}
	return out
}

// AssertNameLimit checks a kind's name limit against its children: with a
// name of limit characters, every child children returns has names and
// labels the API server accepts; with one character more, one is refused
// (so the limit is the tightest).
func AssertNameLimit(t *testing.T, limit int, children func(name string) []metav1.Object) {
	t.Helper()
	for _, n := range []int{limit, limit + 1} {
		problems := NameProblems(children(strings.Repeat("a", n))...)
		if n == limit && len(problems) > 0 {
			t.Errorf("a name of %d characters is accepted but makes children the API server refuses:\n%s", n, strings.Join(problems, "\n"))
		}
		if n > limit && len(problems) == 0 {
			t.Errorf("a name of %d characters makes valid children: the limit %d is not the tightest", n, limit)
		}
	}
}
