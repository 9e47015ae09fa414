package workload

import (
	"fmt"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// The defaults of ToolHive's awsSts schema. The API server applies them;
// the builder applies them too, so a build never depends on whether the
// object passed through the server.
const (
	awsStsDefaultService          = "aws-mcp"
	awsStsDefaultRoleClaim        = "groups"
	awsStsDefaultSessionDuration  = int32(3600)
	awsStsDefaultSessionNameClaim = "sub"
)

// validateAWSSts returns what ToolHive's operator refuses in an awsSts
// block beyond its schema: no region, neither a fallback role nor a
// mapping, a mapping without a role or with not exactly one of claim and
// matcher, a session duration outside STS's 900 to 43200 seconds.
func validateAWSSts(a *thv1.AWSStsConfig) []string {
	var errs []string
	if a.Region == "" {
		errs = append(errs, "spec.awsSts.region: required")
	}
	if a.FallbackRoleArn == "" && len(a.RoleMappings) == 0 {
		errs = append(errs, "spec.awsSts: at least one of fallbackRoleArn and roleMappings is required")
	}
	for i, m := range a.RoleMappings {
		if m.RoleArn == "" {
			errs = append(errs, fmt.Sprintf("spec.awsSts.roleMappings[%d].roleArn: required", i))
		}
		if (m.Claim == "") == (m.Matcher == "") {
			errs = append(errs, fmt.Sprintf("spec.awsSts.roleMappings[%d]: exactly one of claim and matcher is required", i))
		}
	}
	if d := a.SessionDuration; d != nil && (*d < 900 || *d > 43200) {
		errs = append(errs, fmt.Sprintf("spec.awsSts.sessionDuration: %d is not between 900 and 43200 seconds", *d))
	}
	return errs
}

// awsStsRunConfig is the RunConfig's aws_sts_config for an awsSts block,
// field for field as ToolHive's operator writes it (subjectProviderName
// is vMCP's and not written).
func awsStsRunConfig(a *thv1.AWSStsConfig) *schema.AWSStsConfig {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	out := &schema.AWSStsConfig{
		Region:           a.Region,
		Service:          or(a.Service, awsStsDefaultService),
		FallbackRoleArn:  a.FallbackRoleArn,
		RoleClaim:        or(a.RoleClaim, awsStsDefaultRoleClaim),
		SessionDuration:  awsStsDefaultSessionDuration,
		SessionNameClaim: or(a.SessionNameClaim, awsStsDefaultSessionNameClaim),
	}
	if a.SessionDuration != nil {
		out.SessionDuration = *a.SessionDuration
	}
	for _, m := range a.RoleMappings {
		out.RoleMappings = append(out.RoleMappings, schema.AWSRoleMapping{
			Claim: m.Claim, Matcher: m.Matcher, RoleArn: m.RoleArn, Priority: m.Priority,
		})
	}
	return out
}
