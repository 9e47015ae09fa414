package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestBrokenLinksAndAnchorsAreFound(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a.html":         `<a href="b.html#x">ok</a> <a href="b.html#y">no anchor</a> <a href="c.html">no page</a> <a href="#top">own</a> <a href="https://example.com/#z">other site</a> <a href="img.png">file</a> <h1 id="top">A</h1>`,
		"b.html":         `<h2 id="x">X</h2>`,
		"img.png":        "",
		"sub/index.html": `<a href="../b.html#x">ok</a> <a href="../a.html#gone">gone</a>`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	problems, pages, err := check(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`a.html: b.html#y: b.html has no id "y"`,
		`a.html: c.html: no such page`,
		`sub/index.html: ../a.html#gone: a.html has no id "gone"`,
	}
	if pages != 3 || !slices.Equal(problems, want) {
		t.Errorf("check = %q (%d pages), want %q (3 pages)", problems, pages, want)
	}
}
