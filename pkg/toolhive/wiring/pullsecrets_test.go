package wiring

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func refs(names ...string) []corev1.LocalObjectReference { return PullSecretRefs(names) }

// ToolHive's operator lists a workload's own pull secrets first and
// appends the operator-wide ones it lacks; nothing at all stays nil, so a
// cluster without defaults writes what it always wrote.
func TestMergePullSecrets(t *testing.T) {
	for _, c := range []struct {
		own, defaults []corev1.LocalObjectReference
		want          string
	}{
		{nil, nil, "[]"},
		{refs("a"), nil, "[{a}]"},
		{nil, refs(" b ", "", "c"), "[{b} {c}]"},
		{refs("c", "a"), refs("a", "b"), "[{c} {a} {b}]"},
		{refs("a", "a"), nil, "[{a}]"},
	} {
		got := MergePullSecrets(c.own, c.defaults)
		if fmt.Sprint(got) != c.want {
			t.Errorf("MergePullSecrets(%v, %v) = %v, want %s", c.own, c.defaults, got, c.want)
		}
		if len(c.own) == 0 && len(c.defaults) == 0 && got != nil {
			t.Errorf("nothing merged must stay nil, got %#v", got)
		}
	}
}
