package wiring

import (
	"errors"
	"fmt"
	"slices"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// checkUpstreamFilter runs on a vMCP's spec.authServerUpstreamFilter the
// checks ToolHive v0.63.0's operator runs before it writes the
// configuration (its schema keeps only the cheap ones, for its CEL cost
// budget), with its messages: at least two upstreams, at least one rule,
// then each rule and the defaults in turn. configured are the names of
// spec.authServerConfig.upstreamProviders, in order; the first one every
// user signs in with, so no rule may name it, and every other name must
// be one of the rest.
func checkUpstreamFilter(f *thv1.AuthServerUpstreamFilterConfig, configured []string) error {
	if len(configured) < 2 {
		return fmt.Errorf("group-based upstream filter requires at least two configured upstreams, got %d", len(configured))
	}
	if len(f.Rules) == 0 {
		return errors.New("group-based upstream filter requires at least one rule")
	}
	first, rest := configured[0], configured[1:]
	for i, r := range f.Rules {
		switch {
		case len(r.Groups) == 0:
			return fmt.Errorf("rules[%d]: groups must not be empty", i)
		case slices.Contains(r.Groups, ""):
			return fmt.Errorf("rules[%d]: groups must not contain empty values", i)
		case hasDuplicate(r.Groups):
			return fmt.Errorf("rules[%d]: groups must not contain duplicate values", i)
		case len(r.UpstreamProviders) == 0:
			return fmt.Errorf("rules[%d]: upstreamProviders must not be empty", i)
		}
		if err := checkFilterUpstreams(fmt.Sprintf("rules[%d].upstreamProviders", i), r.UpstreamProviders, first, rest); err != nil {
			return err
		}
	}
	return checkFilterUpstreams("defaultUpstreams", f.DefaultUpstreams, first, rest)
}

// checkFilterUpstreams checks one list of upstream names of the filter.
func checkFilterUpstreams(field string, names []string, first string, rest []string) error {
	if slices.Contains(names, "") {
		return fmt.Errorf("%s: must not contain empty values", field)
	}
	if hasDuplicate(names) {
		return fmt.Errorf("%s: must not contain duplicate values", field)
	}
	for _, n := range names {
		if n == first {
			return fmt.Errorf("%s: must not reference the mandatory first upstream %q", field, first)
		}
		if !slices.Contains(rest, n) {
			return fmt.Errorf("%s: %q is not a configured upstream", field, n)
		}
	}
	return nil
}

// hasDuplicate reports whether a value appears twice in values.
func hasDuplicate(values []string) bool {
	seen := make(map[string]bool, len(values))
	for _, v := range values {
		if seen[v] {
			return true
		}
		seen[v] = true
	}
	return false
}

// upstreamFilter is the filter as authserver-config.yaml carries it: the
// spec's, field for field; defaults left out when empty.
func upstreamFilter(f *thv1.AuthServerUpstreamFilterConfig) *schema.UpstreamFilter {
	if f == nil {
		return nil
	}
	out := &schema.UpstreamFilter{Claim: f.Claim, Rules: make([]schema.UpstreamFilterRule, len(f.Rules))}
	for i, r := range f.Rules {
		out.Rules[i] = schema.UpstreamFilterRule{Groups: slices.Clone(r.Groups), UpstreamProviders: slices.Clone(r.UpstreamProviders)}
	}
	if len(f.DefaultUpstreams) > 0 {
		out.DefaultUpstreams = slices.Clone(f.DefaultUpstreams)
	}
	return out
}
