package framework

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests need no API server: they cover the helpers every integration
// package leans on.

func TestNamespacePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"TestFoo":                      "testfoo-",
		"TestFoo/sub_case-2":           "testfoo-sub-case-2-",
		"Test__Weird///Name":           "test-weird-name-",
		"/":                            "test-",
		strings.Repeat("TestLong", 20): strings.Repeat("testlong", 20)[:50] + "-",
	} {
		if got := namespacePrefix(in); got != want {
			t.Errorf("namespacePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEventuallyKeepsPollingThroughErrors(t *testing.T) {
	calls := 0
	began := time.Now()
	Eventually(t, 5*time.Second, func() (bool, error) {
		calls++
		if calls < 3 {
			return false, errors.New("not yet")
		}
		return true, nil
	}, "the third call")
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
	if d := time.Since(began); d < 30*time.Millisecond || d > 2*time.Second {
		t.Errorf("three polls took %v, want about 40ms", d)
	}
}

func TestFindBinariesHonoursEnv(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(BinariesEnv, empty)
	_, err := FindBinaries()
	if err == nil || !strings.Contains(err.Error(), BinariesEnv) || !strings.Contains(err.Error(), "kube-apiserver not found") {
		t.Fatalf("FindBinaries with an empty $%s: %v", BinariesEnv, err)
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(empty, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := FindBinaries(); err != nil || got != empty {
		t.Fatalf("FindBinaries = %q, %v; want %q", got, err, empty)
	}
}

func TestReadManifests(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n",
		"b.json": `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"three"}}`,
		"c.md":   "not a manifest",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := ReadManifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	if got, want := strings.Join(names, ","), "ConfigMap/one,ConfigMap/two,Secret/three"; got != want {
		t.Errorf("ReadManifests = %s, want %s", got, want)
	}
}

func TestRemoveStaleDirs(t *testing.T) {
	parent := t.TempDir()
	mk := func(name, owner string) string {
		dir := filepath.Join(parent, dirPrefix+name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	// PID 2^22+1 is above Linux's pid_max ceiling, so it never runs.
	dead := mk("dead", "4194305")
	live := mk("live", "1")
	mine := mk("mine", "")
	removeStaleDirs(parent)
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("folder of a dead owner kept")
	}
	for _, d := range []string{live, mine} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}
