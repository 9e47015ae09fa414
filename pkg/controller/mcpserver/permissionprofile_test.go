package mcpserver

import (
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// spec.permissionProfile is ignored, as ToolHive v0.63.0's operator
// ignores it (controllers/mcpserver_controller.go, its
// PermissionProfileUnsupported event): one Warning event per spec change
// while it is set, and none once the status has caught up or without it.
func TestPermissionProfileIgnoredWithAnEvent(t *testing.T) {
	withProfile := func(s *thv1.MCPServer) {
		s.Spec.PermissionProfile = &thv1.PermissionProfileRef{Type: thv1.PermissionProfileTypeBuiltin, Name: "none"}
	}
	f := newFixture(t, newServer("fetch", withProfile))
	if _, err := f.sync("fetch"); err != nil {
		t.Fatal(err)
	}
	const want = "Warning PermissionProfileUnsupported spec.permissionProfile is deprecated and unsupported by the Kubernetes operator; it has no effect"
	if ev := f.Events(); len(ev) != 1 || ev[0] != want {
		t.Errorf("events %q, want [%q]", ev, want)
	}
	f.applyServerBehaviour()
	f.refresh()
	f.converge("fetch")
	if ev := f.Events(); len(ev) != 0 {
		t.Errorf("events once observedGeneration caught up: %q", ev)
	}

	plain := newFixture(t, newServer("fetch"))
	plain.converge("fetch")
	if ev := plain.Events(); len(ev) != 0 {
		t.Errorf("events without the field: %q", ev)
	}
}
