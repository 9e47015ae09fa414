// Command docfresh checks that every generated document that states
// measured results is current: that none of its inputs changed after the
// run it names (its provenance line, test/provenance), or that the page
// says it is not current.
//
// A document's inputs are its generator and the code it measures: the
// Go packages its generator and the measured binary are built from (go
// list -deps; a package's test files count only where the tests are the
// generator, as in the fault suite), and the files the run reads
// (go.mod, the pinned versions, the chart, test data). A commit after the
// run that touches an input makes the document stale, unless
// hack/docs-unaffected.txt lists it for that document with the reason it
// changes no figure ("<doc> <commit> <why>"). Merges are not counted:
// their changes are their parents'.
//
// A stale document passes only if it says so: a notice under its title
// naming the first commit that changed an input ("-fix" writes or
// removes these notices). Regenerating the document (its command)
// removes the notice and names the new commit.
//
//	go run ./hack/docfresh          # check (make verify)
//	go run ./hack/docfresh -fix     # say so on the pages that are not current
//	go run ./hack/docfresh -list    # print each document's input commits
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hivekeeper/hivekeeper/test/provenance"
)

// doc is a generated document and its inputs.
type doc struct {
	path string
	// packages are built into the generator or the binary it measures:
	// their non-test Go files and embedded files are inputs, and so are
	// those of every package of this module they import.
	packages []string
	// tests are packages whose test files are the generator: every file
	// of their directories is an input (and what they import, as above).
	tests []string
	// files are files or directories (every file under them) the run
	// reads.
	files []string
	// ignore are directories (of this module) whose packages the
	// generator imports for names only, not for what it measures.
	ignore []string
}

// common are read by every run that starts the test cluster.
var common = []string{"go.mod", "go.sum", "hack/versions.env", "hack/test-binaries.sh", "config/crd/"}

var docs = []doc{
	{
		path:     "docs/performance.md",
		packages: []string{"./cmd/controller", "./test/bench"},
		files:    append(slices.Clone(common), "hack/toolhive-binaries.sh", "hack/toolhive-build/", "hack/helm.sh", "deploy/charts/hivekeeper/"),
	},
	{
		path:     "docs/reliability.md",
		packages: []string{"./cmd/controller"},
		tests:    []string{"./test/integration/faults"},
		files:    slices.Clone(common),
	},
	{
		path:  "docs/toolhive-releases.md",
		tests: []string{"./test/toolhivedelta"},
		// It runs ToolHive's operators, not hivekeeper: of pkg/ it reads
		// the names of the installation id's ConfigMap and the API types.
		ignore: []string{"pkg/", "cmd/"},
		files: append(slices.Clone(common), "hack/toolhive-binaries.sh", "hack/toolhive-build/", "test/toolhivedelta/testdata/",
			"test/conformance/testdata/table/"),
	},
	// mutation.md's rows are per package and each is measured on its
	// own (make mutate PKGS=...), hours for all of pkg/: its inputs are
	// the report's generator and texts; the packages' code is judged by
	// make verify-mutation on every change instead.
	{
		path:     "docs/mutation.md",
		packages: []string{"./hack/mutationreport"},
		files:    []string{"hack/mutation-notes.md", "hack/mutation-equivalent.txt"},
	},
}

// ledger is the file of commits judged not to affect a document.
const ledger = "hack/docs-unaffected.txt"

func main() {
	fix := flag.Bool("fix", false, "write a notice on each page that is not current (and remove it from pages that are)")
	list := flag.Bool("list", false, "print each document's input commits since its run, marked or not")
	flag.Parse()
	root, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		fatalf("not in a git repository: %v", err)
	}
	if err := os.Chdir(root); err != nil {
		fatalf("%v", err)
	}
	marked, err := readLedger(ledger)
	if err != nil {
		fatalf("%v", err)
	}
	shallow, _ := git("", "rev-parse", "--is-shallow-repository")
	failed := false
	for _, d := range docs {
		msg, ok := check(d, marked, shallow == "true", *fix, *list)
		if msg != "" {
			fmt.Println(msg)
		}
		failed = failed || !ok
	}
	for _, path := range unregistered(docs) {
		fmt.Printf("%s: names the run that generated it, but hack/docfresh does not list its inputs: add it to docs\n", path)
		failed = true
	}
	if failed {
		fmt.Printf("\nA generated document's inputs changed after its run. For each, either run its command again, or add the commits to %s with the reason they change none of its figures, or run `make docs-stale` to say on the page that it is not current.\n", ledger)
		os.Exit(1)
	}
}

// unregistered returns the pages under docs/ with a provenance line that
// list does not hold: a generator added without its inputs.
func unregistered(list []doc) []string {
	pages, _ := filepath.Glob("docs/*.md")
	var out []string
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if _, ok := provenance.Parse(string(b)); ok && !slices.ContainsFunc(list, func(d doc) bool { return d.path == p }) {
			out = append(out, p)
		}
	}
	return out
}

// check judges one document, and with fix rewrites its notice.
func check(d doc, marked map[string][]string, shallow, fix, list bool) (string, bool) {
	b, err := os.ReadFile(d.path)
	if err != nil {
		return fmt.Sprintf("%s: %v", d.path, err), false
	}
	text := string(b)
	rec, ok := provenance.Parse(text)
	if !ok {
		return fmt.Sprintf("%s: no provenance line (`<!-- generated by ... at commit ... -->`); its generator writes one", d.path), false
	}
	if _, err := git("", "cat-file", "-e", rec.Commit+"^{commit}"); err != nil {
		if shallow {
			return fmt.Sprintf("%s: its run's commit %.12s is not in this shallow clone; not checked", d.path, rec.Commit), true
		}
		return fmt.Sprintf("%s: its run's commit %s is not in the repository", d.path, rec.Commit), false
	}
	in, err := inputsOf(d)
	if err != nil {
		return fmt.Sprintf("%s: %v", d.path, err), false
	}
	commits, err := changesSince(rec, d.path, in)
	if err != nil {
		return fmt.Sprintf("%s: %v", d.path, err), false
	}
	var unmarked []change
	for _, c := range commits {
		if !isMarked(marked[d.path], c.hash) {
			unmarked = append(unmarked, c)
		}
		if list {
			fmt.Printf("%s: %.12s %v %s (%s)\n", d.path, c.hash, isMarked(marked[d.path], c.hash), c.subject, strings.Join(c.files, " "))
		}
	}
	notice, hasNotice := noticeOf(text)
	switch {
	case len(unmarked) == 0 && !hasNotice:
		return "", true
	case len(unmarked) == 0:
		if fix {
			return rewrite(d.path, text, "")
		}
		return fmt.Sprintf("%s: says it is not current, but no input changed since its run; run `make docs-stale` to remove the notice", d.path), false
	case hasNotice && strings.HasPrefix(unmarked[0].hash, notice):
		return fmt.Sprintf("%s: not current since %.12s (%d commits), and says so", d.path, unmarked[0].hash, len(unmarked)), true
	case fix:
		return rewrite(d.path, text, noticeText(rec, unmarked[0]))
	}
	var b2 strings.Builder
	fmt.Fprintf(&b2, "%s: stale: %d commits after its run (%.12s, `%s`) changed its inputs:\n", d.path, len(unmarked), rec.Commit, rec.Command)
	for i, c := range unmarked {
		if i == 10 {
			fmt.Fprintf(&b2, "  ... and %d more\n", len(unmarked)-i)
			break
		}
		fmt.Fprintf(&b2, "  %.12s %s (%s)\n", c.hash, c.subject, strings.Join(first(c.files, 3), " "))
	}
	return strings.TrimRight(b2.String(), "\n"), false
}

func first(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), "...")
}

// The notice a page that is not current carries under its provenance
// line.
var noticeRE = regexp.MustCompile(`(?m)^> \*\*Not current\.\*\* .*first in commit ([0-9a-f]{7,40})\b.*\n\n?`)

func noticeOf(text string) (string, bool) {
	m := noticeRE.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func noticeText(rec provenance.Record, c change) string {
	return fmt.Sprintf("> **Not current.** What this page measures has changed since its run: first in commit %.12s. Run `%s` to measure it again.\n\n", c.hash, rec.Command)
}

// rewrite replaces the page's notice with notice (none if empty), placed
// after the provenance line.
func rewrite(path, text, notice string) (string, bool) {
	text = noticeRE.ReplaceAllString(text, "")
	if notice != "" {
		i := strings.Index(text, "<!-- generated by ")
		j := strings.Index(text[i:], "-->\n")
		at := i + j + len("-->\n")
		for at < len(text) && text[at] == '\n' {
			at++
		}
		text = text[:at] + notice + text[at:]
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Sprintf("%s: %v", path, err), false
	}
	if notice == "" {
		return fmt.Sprintf("%s: current; notice removed", path), true
	}
	return fmt.Sprintf("%s: not current; notice written", path), true
}

func isMarked(list []string, hash string) bool {
	for _, m := range list {
		if strings.HasPrefix(hash, m) {
			return true
		}
	}
	return false
}

// readLedger reads "<doc> <commit> <why>" lines; # starts a comment.
func readLedger(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]string{}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || !regexp.MustCompile(`^[0-9a-f]{7,40}$`).MatchString(fields[1]) {
			return nil, fmt.Errorf("%s:%d: want \"<doc> <commit> <why>\", got %q", path, n, line)
		}
		out[fields[0]] = append(out[fields[0]], fields[1])
	}
	return out, s.Err()
}

// inputs says whether a file (relative to the repository's root) is an
// input of a document.
type inputs struct {
	// dirs are package directories whose non-test Go files and embedded
	// files count; testDirs those whose every file counts.
	dirs, testDirs map[string]bool
	embeds         map[string]bool
	prefixes       []string
}

func (in inputs) has(file string) bool {
	dir := filepath.Dir(file)
	switch {
	case in.testDirs[dir]:
		return true
	case in.dirs[dir] && strings.HasSuffix(file, ".go") && !strings.HasSuffix(file, "_test.go"):
		return true
	case in.embeds[file]:
		return true
	}
	for _, p := range in.prefixes {
		if file == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(file, p)) {
			return true
		}
	}
	return false
}

func inputsOf(d doc) (inputs, error) {
	in := inputs{dirs: map[string]bool{}, testDirs: map[string]bool{}, embeds: map[string]bool{}, prefixes: d.files}
	if len(d.packages)+len(d.tests) == 0 {
		return in, nil
	}
	root, _ := os.Getwd()
	args := []string{"list", "-deps", "-f", "{{.Dir}}\t{{join .EmbedFiles \"\\t\"}}"}
	if len(d.tests) > 0 {
		args = append(args, "-test")
	}
	args = append(append(args, d.packages...), d.tests...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return in, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		rel, err := filepath.Rel(root, fields[0])
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // the standard library and other modules: go.sum
		}
		if slices.ContainsFunc(d.ignore, func(p string) bool { return strings.HasPrefix(rel+"/", p) }) {
			continue
		}
		in.dirs[rel] = true
		for _, e := range fields[1:] {
			if e != "" {
				in.embeds[filepath.Join(rel, e)] = true
			}
		}
	}
	for _, t := range d.tests {
		in.testDirs[filepath.Clean(t)] = true
	}
	return in, nil
}

// change is a commit that touched inputs.
type change struct {
	hash, subject string
	files         []string
}

// changesSince lists the commits after the run that touched an input,
// oldest first. A run made with uncommitted changes belongs to the
// commit that brought its provenance line in, which is not counted.
func changesSince(rec provenance.Record, path string, in inputs) ([]change, error) {
	out, err := git("", "log", "--no-merges", "--reverse", "--format=%x01%H%x02%s", "--name-only", rec.Commit+"..HEAD")
	if err != nil {
		return nil, err
	}
	own := map[string]bool{}
	if rec.Dirty {
		brought, err := git("", "log", "--format=%H", "-S", rec.Commit, rec.Commit+"..HEAD", "--", path)
		if err != nil {
			return nil, err
		}
		for _, h := range strings.Fields(brought) {
			own[h] = true
		}
	}
	var changes []change
	for _, entry := range strings.Split(out, "\x01")[1:] {
		head, names, _ := strings.Cut(entry, "\n")
		hash, subject, _ := strings.Cut(head, "\x02")
		if own[hash] {
			continue
		}
		c := change{hash: hash, subject: subject}
		for _, f := range strings.Fields(names) {
			if in.has(f) {
				c.files = append(c.files, f)
			}
		}
		if len(c.files) > 0 {
			changes = append(changes, c)
		}
	}
	return changes, nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "docfresh: "+format+"\n", a...)
	os.Exit(2)
}
