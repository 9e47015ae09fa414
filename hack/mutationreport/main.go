// Command mutationreport turns the JSON results of gremlins runs (one file
// per package, gremlins unleash -o) into a Markdown table of killed,
// survived and not-covered mutants per package, followed by each
// survivor's position and source line, so that a survivor can be judged
// (killed by a new test, or explained as equivalent) without rerunning the
// tool. Each argument is DIR=FILE: the directory gremlins was run on (its
// file names are relative to it) and the JSON it wrote.
//
// -equivalent names the file of survivors judged equivalent (no test can
// tell them from the code), each with its reason; the report shows the
// reason beside the survivor. -floor instead checks the efficacy of each
// result against the floor file (lines "package efficacy") and exits 1
// when one is lower. -changed instead checks the result of a run limited
// to a diff's lines (gremlins --diff) and exits 1 when any mutant
// survived that the -equivalent file does not list.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hivekeeper/hivekeeper/test/provenance"
)

// result is the part of gremlins' JSON output this command reads.
type result struct {
	Files []struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
	Elapsed float64 `json:"elapsed_time"`
}

type pkgStats struct {
	killed, lived, notCovered, timedOut, notViable int
	survivors, uncovered                           []mutant
	elapsed                                        float64
}

// mutant is one survivor (or uncovered mutant): where it is, its type and
// the text of its source line, spaces collapsed.
type mutant struct {
	file, typ, text string // file is relative to the module root
	line, col       int
}

func (m mutant) String() string {
	return fmt.Sprintf("%s:%d:%d %s", path.Base(m.file), m.line, m.col, m.typ)
}

// efficacy is gremlins' test efficacy: killed over killed and lived.
func (s *pkgStats) efficacy() float64 {
	if s.killed+s.lived == 0 {
		return 100
	}
	return 100 * float64(s.killed) / float64(s.killed+s.lived)
}

func main() {
	title := flag.String("title", "Mutation testing", "the report's heading")
	intro := flag.String("intro", "", "a file whose text goes under the heading")
	floor := flag.String("floor", "", "check efficacy against this floor file instead of writing a report")
	equivalent := flag.String("equivalent", "", "the file of survivors judged equivalent, with their reasons")
	changed := flag.Bool("changed", false, "check a diff-limited run: fail on any survivor not in -equivalent")
	flag.Parse()
	var equiv []equivalence
	if *equivalent != "" {
		var err error
		if equiv, err = readEquivalent(*equivalent); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	stats := map[string]*pkgStats{}
	var dirs []string
	for _, arg := range flag.Args() {
		dir, f, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "%s: want DIR=FILE\n", arg)
			os.Exit(2)
		}
		dirs = append(dirs, path.Clean(dir))
		if err := read(path.Clean(dir), f, stats); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if *changed {
		os.Exit(checkChanged(dirs, stats, equiv, os.Stdout))
	}
	if *floor != "" {
		os.Exit(check(*floor, stats, os.Stdout))
	}
	if err := report(os.Stdout, *title, *intro, stats, equiv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// read adds one gremlins result file to stats. A file's package is its
// directory, under dir: gremlins names files relative to the directory
// it was run on.
func read(dir, name string, stats map[string]*pkgStats) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	seen := map[*pkgStats]bool{}
	for _, f := range r.Files {
		pkg := path.Join(dir, path.Dir(f.FileName))
		s := stats[pkg]
		if s == nil {
			s = &pkgStats{}
			stats[pkg] = s
		}
		if !seen[s] {
			seen[s] = true
			s.elapsed += r.Elapsed
		}
		file := path.Join(dir, f.FileName)
		var lines []string
		for _, m := range f.Mutations {
			var mu mutant
			if m.Status == "LIVED" || m.Status == "NOT COVERED" {
				if lines == nil {
					// The source as it is now; a missing file leaves the text empty.
					b, _ := os.ReadFile(file)
					lines = strings.Split(string(b), "\n")
				}
				mu = mutant{file: file, typ: m.Type, line: m.Line, col: m.Column}
				if m.Line >= 1 && m.Line <= len(lines) {
					mu.text = strings.Join(strings.Fields(lines[m.Line-1]), " ")
				}
			}
			switch m.Status {
			case "KILLED":
				s.killed++
			case "LIVED":
				s.lived++
				s.survivors = append(s.survivors, mu)
			case "NOT COVERED":
				s.notCovered++
				s.uncovered = append(s.uncovered, mu)
			case "TIMED OUT":
				s.timedOut++
			case "NOT VIABLE":
				s.notViable++
			}
		}
	}
	return nil
}

func sortedKeys(stats map[string]*pkgStats) []string {
	keys := make([]string, 0, len(stats))
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func report(w io.Writer, title, intro string, stats map[string]*pkgStats, equiv []equivalence) error {
	fmt.Fprintf(w, "# %s\n\n%s\n\n", title, provenance.Current(".", "make mutate").Line())
	if intro != "" {
		b, err := os.ReadFile(intro)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", strings.TrimSpace(string(b)))
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| package | killed | survived | not covered | timed out | not viable | efficacy | run time |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, k := range sortedKeys(stats) {
		s := stats[k]
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %.2f%% | %.0fs |\n", k, s.killed, s.lived, s.notCovered, s.timedOut, s.notViable, s.efficacy(), s.elapsed)
	}
	for _, k := range sortedKeys(stats) {
		s := stats[k]
		if len(s.survivors) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n## Survivors in %s\n\n", k)
		for _, v := range s.survivors {
			fmt.Fprintf(w, "- %s `%s`", v, v.text)
			if e := match(equiv, v); e != nil {
				fmt.Fprintf(w, ": equivalent. %s", e.reason)
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

// check compares each package of stats named in the floor file with its
// recorded efficacy; packages without a result are not checked.
func check(floorFile string, stats map[string]*pkgStats, w io.Writer) int {
	f, err := os.Open(floorFile)
	if err != nil {
		fmt.Fprintln(w, err)
		return 2
	}
	defer f.Close()
	rc := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		want, err := strconv.ParseFloat(strings.TrimSuffix(fields[1], "%"), 64)
		if err != nil {
			fmt.Fprintf(w, "%s: bad floor %q\n", floorFile, fields[1])
			return 2
		}
		s := stats[path.Clean(fields[0])]
		if s == nil {
			continue
		}
		verdict := "ok"
		// A hundredth of a percent of slack for the rounding of the file.
		if s.efficacy() < want-0.01 {
			verdict, rc = "BELOW THE FLOOR", 1
		}
		fmt.Fprintf(w, "%s: efficacy %.2f%% (floor %.2f%%; %d killed, %d survived, %d not covered): %s\n",
			fields[0], s.efficacy(), want, s.killed, s.lived, s.notCovered, verdict)
		for _, v := range s.survivors {
			fmt.Fprintf(w, "  survivor %s: %s\n", v, v.text)
		}
	}
	return rc
}

// equivalence is one entry of the -equivalent file: a survivor that no
// test can kill because the mutant behaves as the code does.
type equivalence struct {
	file, typ, text, reason string
}

// readEquivalent reads the -equivalent file. An entry is one line: the
// file (from the module root), the mutant type, then the text of the
// mutated source line (spaces do not matter). It names the line by its
// text, not its number, so that it still matches after lines above it
// move; it covers every mutant of that type on that line. The comment
// lines right above an entry are its reason.
func readEquivalent(name string) ([]equivalence, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var out []equivalence
	var reason []string
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
			reason = nil
		case strings.HasPrefix(l, "#"):
			reason = append(reason, strings.TrimSpace(strings.TrimPrefix(l, "#")))
		default:
			f := strings.Fields(l)
			if len(f) < 3 {
				return nil, fmt.Errorf("%s:%d: want FILE TYPE SOURCE-LINE", name, i+1)
			}
			if len(reason) == 0 {
				return nil, fmt.Errorf("%s:%d: no reason (a comment right above) for %s", name, i+1, l)
			}
			out = append(out, equivalence{file: path.Clean(f[0]), typ: f[1], text: strings.Join(f[2:], " "), reason: strings.Join(reason, " ")})
			reason = nil
		}
	}
	return out, nil
}

func match(equiv []equivalence, m mutant) *equivalence {
	for i, e := range equiv {
		if e.file == m.file && e.typ == m.typ && e.text == m.text {
			return &equiv[i]
		}
	}
	return nil
}

// checkChanged judges a run limited to a diff's lines: every mutant there
// that a test covers must be killed, unless it is a listed equivalent.
// Mutants on lines no test runs are listed but do not fail the check, as
// the whole-package efficacy does not count them either. dirs are the
// directories gremlins was run on.
func checkChanged(dirs []string, stats map[string]*pkgStats, equiv []equivalence, w io.Writer) int {
	rc := 0
	for _, k := range sortedKeys(stats) {
		s := stats[k]
		// A subpackage is named only when the diff gave it a mutant.
		if s.killed+s.lived+s.timedOut+s.notCovered+s.notViable == 0 && !slices.Contains(dirs, k) {
			continue
		}
		verdict := "ok"
		var bad []mutant
		for _, v := range s.survivors {
			if match(equiv, v) == nil {
				bad = append(bad, v)
			}
		}
		if len(bad) > 0 {
			verdict, rc = "SURVIVORS", 1
		}
		fmt.Fprintf(w, "%s, changed lines: %d killed, %d survived (%d listed equivalent), %d timed out, %d not covered: %s\n",
			k, s.killed, s.lived, s.lived-len(bad), s.timedOut, s.notCovered, verdict)
		for _, v := range bad {
			fmt.Fprintf(w, "  survived %s:%d:%d %s: %s\n", v.file, v.line, v.col, v.typ, v.text)
		}
		for _, v := range s.uncovered {
			fmt.Fprintf(w, "  not covered by %s's tests %s:%d:%d %s: %s\n", k, v.file, v.line, v.col, v.typ, v.text)
		}
	}
	if rc != 0 {
		fmt.Fprintln(w, "A survivor is a change to the code that every test of its package passes: add a test that fails")
		fmt.Fprintln(w, "under it, or, if no test can (the mutant behaves as the code does), list it with the reason in")
		fmt.Fprintln(w, "hack/mutation-equivalent.txt.")
	}
	return rc
}
