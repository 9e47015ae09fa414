package plugin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A step that waits is told when it starts, with what it waits for, for
// how long at most and the time since the command started, and again
// when it is done, with the time it took: in text as lines, with -o json
// as one JSON object a line.
func TestProgressTellsStepsAsTheyHappen(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tick := func(d time.Duration) { clock = clock.Add(d) }
	run := func(p *progress) {
		p.now = func() time.Time { return clock }
		p.r = &SwitchReport{}
		p.clock()
		tick(2 * time.Second)
		p.begin("scaling ToolHive's operator toolhive-system/toolhive-operator to 0", "none of its pods is left", 5*time.Minute)
		tick(3 * time.Second)
		p.step("scaled ToolHive's operator toolhive-system/toolhive-operator to 0; its pods are gone")
		p.note("a note")
		p.step("a step that waited for nothing")
	}

	var text bytes.Buffer
	run(&progress{w: &text, text: true})
	want := "  scaling ToolHive's operator toolhive-system/toolhive-operator to 0: waiting until none of its pods is left, up to 5m0s (at 2s)\n" +
		"- scaled ToolHive's operator toolhive-system/toolhive-operator to 0; its pods are gone (took 3s)\n" +
		"  note: a note\n" +
		"- a step that waited for nothing\n"
	if text.String() != want {
		t.Errorf("text\n%s\nwant\n%s", text.String(), want)
	}

	var stream bytes.Buffer
	run(&progress{w: &stream, stream: true})
	var got []Event
	for _, l := range strings.Split(strings.TrimSpace(stream.String()), "\n") {
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, e)
	}
	wantEvents := []Event{
		{Event: "started", Step: "scaling ToolHive's operator toolhive-system/toolhive-operator to 0", WaitsFor: "none of its pods is left", Limit: "5m0s", Elapsed: "2s"},
		{Event: "finished", Step: "scaled ToolHive's operator toolhive-system/toolhive-operator to 0; its pods are gone", Elapsed: "5s", Took: "3s"},
		{Event: "note", Note: "a note", Elapsed: "5s"},
		{Event: "finished", Step: "a step that waited for nothing", Elapsed: "5s"},
	}
	if !equalJSON(got, wantEvents) {
		t.Errorf("events\n got %s\nwant %s", toJSON(got), toJSON(wantEvents))
	}
}
