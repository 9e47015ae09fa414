package framework

import (
	"os"
	"strconv"
	"testing"
)

// CIEnv is the variable CI systems set (to true) in every job.
const CIEnv = "CI"

// Missing is how a test says that something it needs (an API server
// binary, ToolHive's operator, helm, the image) is not there. It skips,
// as a developer's run without the binaries should, unless the run says
// the thing is there: one of envs (the variables that point the tests at
// it) is set, or CI is true. Then it fails: a broken binary or a build
// script that printed nothing must not turn a CI run green by skipping.
func Missing(t testing.TB, reason string, envs ...string) {
	t.Helper()
	if why := required(envs...); why != "" {
		t.Fatalf("%s (a failure, not a skip: %s)", reason, why)
		return
	}
	t.Skip(reason)
}

// required names why a missing dependency fails the run, "" when it may
// skip.
func required(envs ...string) string {
	for _, e := range envs {
		if os.Getenv(e) != "" {
			return "$" + e + " is set"
		}
	}
	if ci, err := strconv.ParseBool(os.Getenv(CIEnv)); err == nil && ci {
		return "$" + CIEnv + " is true"
	}
	return ""
}
