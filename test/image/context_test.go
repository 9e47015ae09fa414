package image

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// TestDockerContextBuilds builds both binaries from exactly the files a
// `docker build .` gets: the repository's files that .dockerignore admits
// (read by the matcher Docker itself uses), copied where the Dockerfile's
// COPY instructions of the build stage put them. A binary that imports a
// package left out of the context fails here, as it would in Docker.
func TestDockerContextBuilds(t *testing.T) {
	root := repoRoot(t)
	files := contextFiles(t, root)
	copies := dockerfileCopies(t, filepath.Join(root, "Dockerfile"))
	src := t.TempDir()
	for _, c := range copies {
		for _, f := range files {
			dst, ok := c.target(f)
			if !ok {
				continue
			}
			data, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(src, filepath.Dir(dst)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, dst), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := t.TempDir()
	for _, pkg := range []string{"./cmd/controller", "./cmd/kubectl-hivekeeper"} {
		// As the Dockerfile builds: static, module files read-only, paths
		// trimmed (which also lets the build cache serve this copy).
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(out, filepath.Base(pkg)), pkg)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go build %s from the Docker context (.dockerignore and the Dockerfile's COPY lines): %v\n%s", pkg, err, b)
		}
	}
}

// repoRoot is the module's root, two folders up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// contextFiles lists the repository's files (tracked, or untracked and
// not git-ignored: what a checkout holds) that .dockerignore admits.
func contextFiles(t *testing.T, root string) []string {
	t.Helper()
	ignore, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer ignore.Close()
	patterns, err := ignorefile.ReadAll(ignore)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (the test lists the checkout's files with git)", err)
	}
	var files []string
	for f := range strings.SplitSeq(strings.TrimRight(string(b), "\x00"), "\x00") {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			continue // deleted in the work tree
		}
		excluded, err := pm.MatchesOrParentMatches(f)
		if err != nil {
			t.Fatal(err)
		}
		if !excluded {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal(".dockerignore admits no file")
	}
	return files
}

// copyOp is a COPY of the build stage: sources in the context to a
// destination under the stage's WORKDIR.
type copyOp struct {
	srcs []string
	dst  string
}

// target is where file f lands in the stage's WORKDIR, if a source of
// the COPY covers it. A folder source copies its contents into the
// destination, a file source copies the file into it (destination ending
// in /) or as it.
func (c copyOp) target(f string) (string, bool) {
	for _, s := range c.srcs {
		s = strings.TrimSuffix(filepath.Clean(s), "/")
		switch {
		case s == ".":
			return filepath.Join(c.dst, f), true
		case f == s:
			if strings.HasSuffix(c.dst, "/") || c.dst == "." || c.dst == "./" {
				return filepath.Join(c.dst, filepath.Base(f)), true
			}
			return filepath.Clean(c.dst), true
		case strings.HasPrefix(f, s+"/"):
			return filepath.Join(c.dst, strings.TrimPrefix(f, s+"/")), true
		}
	}
	return "", false
}

// dockerfileCopies reads the COPY instructions of the Dockerfile's first
// stage (the one that compiles). Only the forms the Dockerfile uses are
// understood: `COPY <src>... <dest>` without flags, on one line; another
// form fails the test, so it is noticed rather than misread.
func dockerfileCopies(t *testing.T, path string) []copyOp {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ops []copyOp
	stages := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			stages++
		case "WORKDIR":
			if stages == 1 && fields[1] != "/src" {
				t.Fatalf("the build stage's WORKDIR is %s; the test assumes /src", fields[1])
			}
		case "COPY", "ADD":
			if stages != 1 {
				continue
			}
			args := fields[1:]
			if len(args) < 2 || slices.ContainsFunc(args, func(a string) bool {
				return strings.HasPrefix(a, "--") || strings.HasPrefix(a, "[") || strings.HasSuffix(a, "\\")
			}) {
				t.Fatalf("Dockerfile: %q is a form this test does not read; extend dockerfileCopies", sc.Text())
			}
			ops = append(ops, copyOp{srcs: args[:len(args)-1], dst: args[len(args)-1]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 {
		t.Fatal("the Dockerfile's build stage copies nothing")
	}
	return ops
}
