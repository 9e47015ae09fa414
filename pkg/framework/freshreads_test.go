package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// A written object is read back until the cache has it or something
// newer; an object the cache never had is still missing (a create whose
// event has not arrived is found by the create's AlreadyExists instead).
func TestFreshReadsPreferOwnWritesUntilTheCacheCatchesUp(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	get, written := FreshReads[*corev1.ConfigMap](indexer, corev1.Resource("configmaps"))
	cm := func(rv, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ResourceVersion: rv}, Data: map[string]string{"k": value}}
	}
	if _, err := get("ns", "c"); !apierrors.IsNotFound(err) {
		t.Fatalf("empty cache: %v", err)
	}
	written(cm("5", "created"))
	if _, err := get("ns", "c"); !apierrors.IsNotFound(err) {
		t.Fatalf("a create the cache has not seen: %v", err)
	}
	if err := indexer.Add(cm("5", "created")); err != nil {
		t.Fatal(err)
	}
	written(cm("7", "patched"))
	if got, err := get("ns", "c"); err != nil || got.Data["k"] != "patched" {
		t.Fatalf("after the patch, before its event: %v %v", got, err)
	}
	if err := indexer.Update(cm("9", "someone else")); err != nil {
		t.Fatal(err)
	}
	if got, err := get("ns", "c"); err != nil || got.Data["k"] != "someone else" {
		t.Fatalf("the cache is newer than the write: %v %v", got, err)
	}
}
