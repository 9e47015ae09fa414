package toolhive

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Exception is one difference a suite accepts, exactly: the path and the
// values on both sides, on each object named. It matches no other object,
// path or value, and an object named that no longer shows the difference
// makes the entry stale, which fails the suite.
type Exception struct {
	// Cause groups a pending entry with others of the same cause; for an
	// allowed difference it says why hivekeeper differs on purpose.
	Cause   string
	Path    string
	A, B    string
	Objects []string
	// Optional marks an entry that need not be seen: a difference the
	// other operator makes only if it gets to the object within the
	// suite's window (ToolHive's operator taking objects back at its own
	// pace). It is matched when seen and never stale.
	Optional bool
}

type exceptionKey struct{ object, path, a, b string }

type exceptionRef struct {
	list  string
	entry *Exception
}

// Judge matches differences with lists of exceptions and remembers which
// entries matched.
type Judge struct {
	index map[exceptionKey]exceptionRef
	order []exceptionKey
	used  map[exceptionKey]bool
}

// NewJudge returns a judge without lists.
func NewJudge() *Judge {
	return &Judge{index: map[exceptionKey]exceptionRef{}, used: map[exceptionKey]bool{}}
}

// Add adds a named list. An entry for an object, path and values an
// earlier list already has is never matched, so it is reported stale.
func (j *Judge) Add(name string, list []Exception) {
	for i := range list {
		e := &list[i]
		for _, o := range e.Objects {
			k := exceptionKey{o, e.Path, e.A, e.B}
			if _, dup := j.index[k]; dup {
				j.order = append(j.order, exceptionKey{"duplicate in " + name + ": " + o, e.Path, e.A, e.B})
				continue
			}
			j.index[k] = exceptionRef{name, e}
			j.order = append(j.order, k)
		}
	}
}

// Match returns the list and the entry that accept d.
func (j *Judge) Match(d Difference) (list string, e *Exception, ok bool) {
	k := exceptionKey{d.Object, d.Path, d.A, d.B}
	ref, ok := j.index[k]
	if !ok {
		return "", nil, false
	}
	j.used[k] = true
	return ref.list, ref.entry, true
}

// Verdict judges one difference a suite found: one the list named allowed
// accepts is logged and is not pending; one another list accepts is logged
// as pending; any other is pending when update is set (the pending list is
// being rewritten) and fails the test otherwise, as "<object> <path>: <a>
// <A>, <b> <B>". It returns whether d belongs in the pending list.
func (j *Judge) Verdict(t testing.TB, d Difference, allowed string, update bool, a, b string) (pending bool) {
	t.Helper()
	list, e, ok := j.Match(d)
	switch {
	case ok && list == allowed:
		t.Logf("allowed: %s (%s)", d, e.Cause)
		return false
	case ok:
		t.Logf("pending (%s): %s", e.Cause, d)
	case update:
		t.Logf("new pending: %s", d)
	default:
		t.Errorf("%s %s: %s %s, %s %s", d.Object, d.Path, a, d.A, b, d.B)
	}
	return true
}

// FailStale fails the test on every entry no difference matched (Stale);
// with update, only on those of the list named allowed: the pending list
// was just rewritten from what was seen.
func (j *Judge) FailStale(t testing.TB, allowed string, update bool) {
	t.Helper()
	for _, s := range j.Stale() {
		if update && !strings.HasPrefix(s, allowed) {
			continue
		}
		t.Errorf("stale: %s: no longer differs; remove the entry", s)
	}
}

// Stale returns every object of an entry that showed no such difference,
// as "list (cause): object: path: A → B". Call it only after every
// difference of every object the lists name was matched.
func (j *Judge) Stale() []string {
	var out []string
	for _, k := range j.order {
		if j.used[k] {
			continue
		}
		ref, ok := j.index[k]
		if ok && ref.entry.Optional {
			continue
		}
		what := "duplicate entry"
		if ok {
			what = fmt.Sprintf("%s (%s)", ref.list, ref.entry.Cause)
		}
		out = append(out, fmt.Sprintf("%s: %s", what, Difference{k.object, k.path, k.a, k.b}))
	}
	return out
}

// Cause is one reason hivekeeper's output differs from ToolHive's
// operator's today, for grouping a pending list into a work list.
type Cause struct {
	Name string
	// Todo says what would remove the difference; of several causes of
	// one name (matching different differences), the first one's counts.
	Todo string
	// Match reports whether a difference has this cause.
	Match func(Difference) bool
}

// Unclassified is the cause of a difference no Cause matches.
const Unclassified = "unclassified"

// Kind returns the kind of the object a Difference names ("<scope>
// Kind/name").
func (d Difference) Kind() string {
	o := d.Object[strings.LastIndexByte(d.Object, ' ')+1:]
	kind, _, _ := strings.Cut(o, "/")
	return kind
}

// PendingList is a generated Go file declaring a pending list.
type PendingList struct {
	File, Package, Var string
	// Doc is the variable's doc comment, without the counts.
	Doc string
	// Command regenerates the file.
	Command string
	Causes  []Cause
}

// Summary counts differences by cause and by kind of object, in the
// causes' order.
func (p PendingList) Summary(diffs []Difference) string {
	byCause, byKind := map[string]int{}, map[string]int{}
	objects := map[string]bool{}
	for _, d := range diffs {
		byCause[p.cause(d).Name]++
		byKind[d.Kind()]++
		objects[d.Object] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d differences on %d objects.\n\nBy cause:\n", len(diffs), len(objects))
	for _, c := range p.names() {
		if n := byCause[c.Name]; n > 0 {
			fmt.Fprintf(&b, "  %5d  %s\n", n, c.Name)
		}
	}
	b.WriteString("\nBy kind:\n")
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %5d  %s\n", byKind[k], k)
	}
	return b.String()
}

// names returns the causes in order, one per name (the first, with its
// Todo), and Unclassified last.
func (p PendingList) names() []Cause {
	var out []Cause
	seen := map[string]bool{}
	for _, c := range append(p.Causes, Cause{Name: Unclassified, Todo: "no cause in the list matches these yet: name one"}) {
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c)
		}
	}
	return out
}

func (p PendingList) cause(d Difference) Cause {
	for _, c := range p.Causes {
		if c.Match(d) {
			return c
		}
	}
	return Cause{Name: Unclassified}
}

// Write writes the file: every difference as an Exception, grouped by its
// first matching cause (in the causes' order), entries with the same
// path and values sharing one entry that names all their objects.
func (p PendingList) Write(diffs []Difference) error {
	type group struct {
		entries map[[3]string][]string
		n       int
	}
	groups := map[string]*group{}
	for _, d := range diffs {
		c := p.cause(d)
		g := groups[c.Name]
		if g == nil {
			g = &group{entries: map[[3]string][]string{}}
			groups[c.Name] = g
		}
		k := [3]string{d.Path, d.A, d.B}
		g.entries[k] = append(g.entries[k], d.Object)
		g.n++
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by %s; DO NOT EDIT.\n\npackage %s\n\n", p.Command, p.Package)
	b.WriteString("import \"github.com/hivekeeper/hivekeeper/test/toolhive\"\n\n")
	for _, line := range strings.Split(strings.TrimSpace(p.Doc+"\n\n"+p.Summary(diffs)), "\n") {
		b.WriteString(strings.TrimRight("// "+line, " ") + "\n")
	}
	fmt.Fprintf(&b, "var %s = []toolhive.Exception{\n", p.Var)
	for _, c := range p.names() {
		g := groups[c.Name]
		if g == nil {
			continue
		}
		b.WriteString("\n")
		for _, line := range wrap(fmt.Sprintf("%s: %d differences. %s", c.Name, g.n, c.Todo), 110) {
			b.WriteString("// " + line + "\n")
		}
		keys := make([][3]string, 0, len(g.entries))
		for k := range g.entries {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, c := keys[i], keys[j]
			if a[0] != c[0] {
				return a[0] < c[0]
			}
			if a[1] != c[1] {
				return a[1] < c[1]
			}
			return a[2] < c[2]
		})
		for _, k := range keys {
			objs := g.entries[k]
			sort.Strings(objs)
			fmt.Fprintf(&b, "{Cause: %s, Path: %s, A: %s, B: %s, Objects: []string{\n",
				goString(c.Name), goString(k[0]), goString(k[1]), goString(k[2]))
			for _, o := range objs {
				fmt.Fprintf(&b, "%s,\n", strconv.Quote(o))
			}
			b.WriteString("}},\n")
		}
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return fmt.Errorf("formatting %s: %w", p.File, err)
	}
	return os.WriteFile(p.File, src, 0o644)
}

// goString writes s as a Go string literal: raw when it has quotes and
// can be, so JSON values read as they are.
func goString(s string) string {
	if strings.Contains(s, `"`) && !strings.ContainsAny(s, "`\r\n") && strconv.CanBackquote(s) {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// wrap breaks text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
