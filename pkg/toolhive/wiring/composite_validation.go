package wiring

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Limits of a forEach step, as ToolHive's vmcp enforces them.
const (
	maxForEachParallel   = 50
	maxForEachIterations = 1000
)

var goIdentifier = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ValidateCompositeTool returns what ToolHive's vmcp refuses in a composite
// tool (its ValidateCompositeToolConfig's rules: name, description, steps,
// parameters an object schema, step ids unique, each step complete for its
// type, dependencies known and acyclic, error and elicitation actions,
// forEach limits), each problem prefixed by the path of the field at
// fault. Templates are not parsed: vmcp parses them with its own
// functions, and its runtime reports a bad one.
func ValidateCompositeTool(path string, t *thv1.CompositeToolSpec) []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if t.Name == "" {
		add("%s.name is required", path)
	}
	if t.Description == "" {
		add("%s.description is required", path)
	}
	if len(t.Steps) == 0 {
		add("%s.steps must have at least one step", path)
	}
	for _, d := range []struct{ field, value string }{{"timeout", t.Timeout}} {
		if _, err := parseDuration(d.value); err != nil {
			add("%s.%s: %v", path, d.field, err)
		}
	}
	if msg := checkParameters(t.Parameters); msg != "" {
		add("%s.parameters: %s", path, msg)
	}
	ids := map[string]bool{}
	for i, s := range t.Steps {
		at := fmt.Sprintf("%s.steps[%d]", path, i)
		switch {
		case s.ID == "":
			add("%s.id is required", at)
		case ids[s.ID]:
			add("%s.id %q is duplicated", at, s.ID)
		}
		ids[s.ID] = true
	}
	for i := range t.Steps {
		errs = append(errs, checkStep(fmt.Sprintf("%s.steps[%d]", path, i), &t.Steps[i], ids)...)
	}
	if cycle := dependencyCycle(t.Steps); cycle != "" {
		add("%s.steps: dependency cycle through step %q", path, cycle)
	}
	return errs
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		return 0, fmt.Errorf("cannot be negative")
	}
	return d, err
}

// checkParameters: vmcp needs the parameters to be an object schema.
func checkParameters(raw *runtime.RawExtension) string {
	if raw == nil || len(raw.Raw) == 0 || string(raw.Raw) == "null" {
		return ""
	}
	b := raw.Raw
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return "must be a JSON object"
	}
	if len(m) == 0 {
		return ""
	}
	switch typ, ok := m["type"]; {
	case !ok:
		return "must have 'type' field (should be 'object' for JSON Schema)"
	case typ != "object":
		return fmt.Sprintf("'type' must be 'object' (got %v)", typ)
	}
	return ""
}

// checkStep checks one step against its type.
func checkStep(at string, s *thv1.WorkflowStep, ids map[string]bool) []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	typ := s.Type
	if typ == "" {
		if s.Tool != "" && s.Message != "" {
			add("%s cannot have both tool and message fields - use explicit type to clarify intent", at)
		}
		typ = thv1.WorkflowStepTypeTool
	}
	switch typ {
	case thv1.WorkflowStepTypeTool:
		if s.Tool == "" {
			add("%s.tool is required when type is tool", at)
		}
	case thv1.WorkflowStepTypeElicitation:
		if s.Message == "" {
			add("%s.message is required when type is elicitation", at)
		}
		for _, h := range []struct {
			name string
			r    *thv1.ElicitationResponse
		}{{"onDecline", s.OnDecline}, {"onCancel", s.OnCancel}} {
			if h.r != nil && !slices.Contains([]string{"abort", "continue", "skip_remaining"}, h.r.Action) {
				add("%s.%s.action must be one of: abort, continue, skip_remaining", at, h.name)
			}
		}
	case thv1.WorkflowStepTypeForEach:
		errs = append(errs, checkForEach(at, s)...)
	default:
		add("%s.type must be one of: tool, elicitation, forEach", at)
	}
	for _, dep := range s.DependsOn {
		if !ids[dep] {
			add("%s.dependsOn references unknown step %q", at, dep)
		}
	}
	if e := s.OnError; e != nil {
		switch {
		case e.Action != "" && !slices.Contains([]string{"abort", "continue", "retry"}, e.Action):
			add("%s.onError.action must be one of: abort, continue, retry", at)
		case e.Action == "retry" && e.RetryCount < 1:
			add("%s.onError.retryCount must be at least 1 when action is retry", at)
		}
		if _, err := parseDuration(e.RetryDelay); err != nil {
			add("%s.onError.retryDelay: %v", at, err)
		}
	}
	if _, err := parseDuration(s.Timeout); err != nil {
		add("%s.timeout: %v", at, err)
	}
	return errs
}

// checkForEach checks a forEach step: a collection, one tool inner step,
// and the limits vmcp enforces.
func checkForEach(at string, s *thv1.WorkflowStep) []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if s.Tool != "" {
		add("%s: forEach step must not have 'tool' field", at)
	}
	if s.Message != "" {
		add("%s: forEach step must not have 'message' field", at)
	}
	if s.Collection == "" {
		add("%s.collection is required for forEach steps", at)
	}
	if s.InnerStep == nil || len(s.InnerStep.Raw) == 0 {
		add("%s.step is required for forEach steps", at)
	} else {
		var inner struct {
			Type string `json:"type"`
			Tool string `json:"tool"`
		}
		switch err := json.Unmarshal(s.InnerStep.Raw, &inner); {
		case err != nil:
			add("%s.step: %v", at, err)
		case inner.Type != "" && inner.Type != thv1.WorkflowStepTypeTool:
			add("%s.step.type must be 'tool' (got %q); only tool inner steps are supported", at, inner.Type)
		case inner.Tool == "":
			add("%s.step.tool is required for tool inner steps", at)
		}
	}
	if s.ItemVar != "" && (!goIdentifier.MatchString(s.ItemVar) || s.ItemVar == "index") {
		add("%s.itemVar must be a Go identifier other than 'index' (got %q)", at, s.ItemVar)
	}
	if s.MaxParallel < 0 || s.MaxParallel > maxForEachParallel {
		add("%s.maxParallel must be between 0 and %d (got %d)", at, maxForEachParallel, s.MaxParallel)
	}
	if s.MaxIterations < 0 || s.MaxIterations > maxForEachIterations {
		add("%s.maxIterations must be between 0 and %d (got %d)", at, maxForEachIterations, s.MaxIterations)
	}
	return errs
}

// dependencyCycle returns a step on a dependsOn cycle, "" when there is
// none (unknown dependencies are reported elsewhere and ignored here).
func dependencyCycle(steps []thv1.WorkflowStep) string {
	deps := map[string][]string{}
	for _, s := range steps {
		deps[s.ID] = s.DependsOn
	}
	const (
		_ = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(id string) string
	visit = func(id string) string {
		switch state[id] {
		case active:
			return id
		case done:
			return ""
		}
		state[id] = active
		for _, d := range deps[id] {
			if _, known := deps[d]; !known {
				continue
			}
			if c := visit(d); c != "" {
				return c
			}
		}
		state[id] = done
		return ""
	}
	for _, s := range steps {
		if c := visit(s.ID); c != "" {
			return c
		}
	}
	return ""
}
