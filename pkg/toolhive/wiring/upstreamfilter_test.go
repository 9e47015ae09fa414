package wiring

import (
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Each of the refusals ToolHive v0.63.0's operator makes of an upstream
// filter, with its message, in its order; a filter that passes them all is
// accepted. corp-idp is the first configured upstream, which every user
// signs in with and no rule may name.
func TestCheckUpstreamFilter(t *testing.T) {
	configured := []string{"corp-idp", "github", "gitlab"}
	rule := func(groups []string, upstreams ...string) thv1.UpstreamFilterGroupRule {
		return thv1.UpstreamFilterGroupRule{Groups: groups, UpstreamProviders: upstreams}
	}
	eng := []string{"eng"}
	for _, tc := range []struct {
		name       string
		configured []string
		rules      []thv1.UpstreamFilterGroupRule
		defaults   []string
		want       string
	}{
		{"valid", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github"), rule([]string{"ops", "sre"}, "gitlab", "github")}, []string{"gitlab"}, ""},
		{"no defaults", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github")}, nil, ""},
		{"one upstream", configured[:1], []thv1.UpstreamFilterGroupRule{rule(eng, "github")}, nil,
			"group-based upstream filter requires at least two configured upstreams, got 1"},
		{"no rules", configured, nil, nil, "group-based upstream filter requires at least one rule"},
		{"rule without groups", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github"), rule(nil, "github")}, nil,
			"rules[1]: groups must not be empty"},
		{"empty group", configured, []thv1.UpstreamFilterGroupRule{rule([]string{"eng", ""}, "github")}, nil,
			"rules[0]: groups must not contain empty values"},
		{"duplicate group", configured, []thv1.UpstreamFilterGroupRule{rule([]string{"eng", "ops", "eng"}, "github")}, nil,
			"rules[0]: groups must not contain duplicate values"},
		{"rule without upstreams", configured, []thv1.UpstreamFilterGroupRule{rule(eng)}, nil,
			"rules[0]: upstreamProviders must not be empty"},
		{"empty upstream", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github", "")}, nil,
			"rules[0].upstreamProviders: must not contain empty values"},
		{"duplicate upstream", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github", "gitlab", "github")}, nil,
			"rules[0].upstreamProviders: must not contain duplicate values"},
		{"first upstream", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github", "corp-idp")}, nil,
			`rules[0].upstreamProviders: must not reference the mandatory first upstream "corp-idp"`},
		{"unknown upstream", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github", "bitbucket")}, nil,
			`rules[0].upstreamProviders: "bitbucket" is not a configured upstream`},
		{"empty default", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github")}, []string{"gitlab", ""},
			"defaultUpstreams: must not contain empty values"},
		{"duplicate default", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github")}, []string{"gitlab", "gitlab"},
			"defaultUpstreams: must not contain duplicate values"},
		{"first upstream as default", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github")}, []string{"corp-idp"},
			`defaultUpstreams: must not reference the mandatory first upstream "corp-idp"`},
		{"unknown default", configured, []thv1.UpstreamFilterGroupRule{rule(eng, "github")}, []string{"bitbucket"},
			`defaultUpstreams: "bitbucket" is not a configured upstream`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkUpstreamFilter(&thv1.AuthServerUpstreamFilterConfig{Rules: tc.rules, DefaultUpstreams: tc.defaults}, tc.configured)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("checkUpstreamFilter = %q, want %q", got, tc.want)
			}
		})
	}
}
