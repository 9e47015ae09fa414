package docs_test

import (
	"regexp"
	"strings"
	"testing"
)

// bannedTerms are words of the project's own test and review process
// that mean nothing to a platform engineer reading the docs: the names of
// benchmark baselines and test environments, of lists the suites keep,
// and references to the tracker's issues. Each says what to write
// instead.
var bannedTerms = []struct {
	re, instead string
}{
	{`spec\s+floor`, "request floor"},
	{`lean\s+environment`, "an API server alone"},
	{`fuller\s+cluster`, "a cluster with nodes"},
	{`work[\s-]+lists?`, "list of pending differences"},
	{`runtime[\s-]+oracle`, "the ToolHive release the tests run"},
	{`\bpeers?\b`, "ToolHive's operator"},
	{`\bharness\b`, "the test's name or what it does"},
	{`\bissues?\s+#?[0-9]+`, "what the issue asked for, without its number"},
	{`(?:^|[\s(])#[0-9]{3,}\b`, "what the upstream change does, without its number"},
	{`\bwork\s+item\b`, "what it is"},
}

// No user document uses the project's internal vocabulary.
func TestDocsUseNoInternalVocabulary(t *testing.T) {
	for _, f := range docFiles(t) {
		lines := strings.Split(read(t, f), "\n")
		for _, b := range bannedTerms {
			re := regexp.MustCompile(`(?i)` + b.re)
			// Across a line break too: each line is read with the next,
			// and a match is reported at the line it starts on.
			for i := range lines {
				pair := lines[i]
				if i+1 < len(lines) {
					pair += " " + lines[i+1]
				}
				for _, m := range re.FindAllStringIndex(pair, -1) {
					if m[0] < len(lines[i]) {
						t.Errorf("%s:%d: %q: write %s", f, i+1, strings.TrimSpace(pair[m[0]:m[1]]), b.instead)
					}
				}
			}
		}
	}
}
