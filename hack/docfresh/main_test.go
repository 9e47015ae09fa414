package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivekeeper/hivekeeper/test/provenance"
)

// repo is a scratch git repository the checks run in.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	r.git("config", "user.email", "t@example.com")
	r.git("config", "user.name", "t")
	r.git("config", "commit.gpgsign", "false")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(r.dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chdir(wd) })
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	out, err := exec.Command("git", append([]string{"-C", r.dir}, args...)...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files and commits them, returning the commit's hash.
func (r *repo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

func (r *repo) read(name string) string {
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// A page is current until a commit touches one of its inputs; then the
// check fails, naming the commit, until the commit is listed as not
// affecting it or the page says it is not current; a commit that touches
// no input changes nothing.
func TestStaleUnlessMarkedOrSaid(t *testing.T) {
	r := newRepo(t)
	d := doc{path: "docs/page.md", files: []string{"gen/", "versions.env"}}
	run := r.commit("the generator", map[string]string{"gen/main.go": "package main\n", "versions.env": "A=1\n", "other.txt": "x\n"})
	page := "# Page\n\n" + provenance.Record{Command: "make page", Commit: run}.Line() + "\n\nFigures.\n"
	r.commit("the page", map[string]string{"docs/page.md": page})

	if msg, ok := check(d, nil, false, false, false); !ok || msg != "" {
		t.Fatalf("a page no input changed after: %q, %v; want current", msg, ok)
	}
	r.commit("not an input", map[string]string{"other.txt": "y\n"})
	if msg, ok := check(d, nil, false, false, false); !ok {
		t.Fatalf("a commit outside the inputs made the page stale: %s", msg)
	}

	changed := r.commit("a new version", map[string]string{"versions.env": "A=2\n"})
	msg, ok := check(d, nil, false, false, false)
	if ok || !strings.Contains(msg, changed[:12]) {
		t.Fatalf("after a commit to an input: %q, %v; want stale, naming %.12s", msg, ok, changed)
	}
	if msg, ok := check(d, map[string][]string{"docs/page.md": {changed[:7]}}, false, false, false); !ok {
		t.Fatalf("a commit listed as not affecting the page still makes it stale: %s", msg)
	}

	if _, ok := check(d, nil, false, true, false); !ok {
		t.Fatal("-fix failed")
	}
	if !strings.Contains(r.read("docs/page.md"), "> **Not current.** What this page measures has changed since its run: first in commit "+changed[:12]) {
		t.Fatalf("-fix wrote no notice naming %.12s:\n%s", changed, r.read("docs/page.md"))
	}
	if msg, ok := check(d, nil, false, false, false); !ok {
		t.Fatalf("a page that says it is not current fails: %s", msg)
	}
	// The notice names the first change; a later one keeps it.
	r.commit("the notice", map[string]string{})
	r.commit("another change", map[string]string{"gen/main.go": "package main // changed\n"})
	if msg, ok := check(d, nil, false, false, false); !ok {
		t.Fatalf("a later change made the notice wrong: %s", msg)
	}

	// Regenerated: the page names the new commit and no notice.
	head := r.git("rev-parse", "HEAD")
	r.commit("regenerated", map[string]string{"docs/page.md": "# Page\n\n" + provenance.Record{Command: "make page", Commit: head}.Line() + "\n\nFigures.\n"})
	if msg, ok := check(d, nil, false, false, false); !ok || msg != "" {
		t.Fatalf("a regenerated page: %q, %v; want current", msg, ok)
	}
}

// A page made with uncommitted changes belongs to the commit that brought
// it in: that commit's changes to inputs do not make it stale.
func TestRunWithUncommittedChangesBelongsToItsCommit(t *testing.T) {
	r := newRepo(t)
	d := doc{path: "docs/page.md", files: []string{"gen/"}}
	run := r.commit("the generator", map[string]string{"gen/main.go": "package main\n"})
	page := "# Page\n\n" + provenance.Record{Command: "make page", Commit: run, Dirty: true}.Line() + "\n"
	r.commit("the generator changed, and the page it wrote", map[string]string{"gen/main.go": "package main // v2\n", "docs/page.md": page})
	if msg, ok := check(d, nil, false, false, false); !ok || msg != "" {
		t.Fatalf("%q, %v; want current", msg, ok)
	}
	r.commit("then a change", map[string]string{"gen/main.go": "package main // v3\n"})
	if _, ok := check(d, nil, false, false, false); ok {
		t.Fatal("a change after the page's own commit did not make it stale")
	}
}

// A page without a provenance line fails.
func TestPageWithoutProvenanceFails(t *testing.T) {
	r := newRepo(t)
	r.commit("a page", map[string]string{"docs/page.md": "# Page\n\nFigures typed by hand.\n"})
	if msg, ok := check(doc{path: "docs/page.md"}, nil, false, false, false); ok || !strings.Contains(msg, "no provenance line") {
		t.Fatalf("%q, %v; want a failure naming the missing line", msg, ok)
	}
}

// A page that names its run but is not in the list of generated
// documents is found: its inputs would go unchecked.
func TestUnregisteredGeneratedPageIsFound(t *testing.T) {
	r := newRepo(t)
	line := provenance.Record{Command: "make page", Commit: strings.Repeat("a", 40)}.Line()
	r.commit("pages", map[string]string{"docs/listed.md": "# A\n\n" + line + "\n", "docs/new.md": "# B\n\n" + line + "\n", "docs/hand.md": "# C\n"})
	if got := unregistered([]doc{{path: "docs/listed.md"}}); len(got) != 1 || got[0] != "docs/new.md" {
		t.Errorf("unregistered = %q, want [docs/new.md]", got)
	}
}
