package index

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

func metaNamespace(obj any) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return m.GetNamespace(), nil
}

func metaName(obj any) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return m.GetName(), nil
}
