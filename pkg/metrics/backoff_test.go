package metrics_test

import (
	"testing"
	"time"

	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

// Two queues of one controller (one per namespace) add up: keys are
// summed and the oldest failure is the older of the two; a controller
// with nothing failing exports 0; an unregistered queue is gone.
func TestBackoffSourcesAddUp(t *testing.T) {
	a := metrics.RegisterBackoff("test-backoff", func() (int, time.Duration) { return 2, 30 * time.Second })
	b := metrics.RegisterBackoff("test-backoff", func() (int, time.Duration) { return 3, 90 * time.Second })
	idle := metrics.RegisterBackoff("test-backoff-idle", func() (int, time.Duration) { return 0, 0 })
	defer idle()
	value := func(name, controller string) float64 {
		t.Helper()
		m := find(gather(t), name, map[string]string{"controller": controller})
		if m == nil {
			return -1
		}
		return m.GetGauge().GetValue()
	}
	for _, c := range []struct {
		name, controller string
		want             float64
	}{
		{"hivekeeper_keys_in_backoff", "test-backoff", 5},
		{"hivekeeper_oldest_failing_key_seconds", "test-backoff", 90},
		{"hivekeeper_keys_in_backoff", "test-backoff-idle", 0},
		{"hivekeeper_oldest_failing_key_seconds", "test-backoff-idle", 0},
	} {
		if got := value(c.name, c.controller); got != c.want {
			t.Errorf("%s{controller=%q} = %v, want %v", c.name, c.controller, got, c.want)
		}
	}
	b()
	if got := value("hivekeeper_oldest_failing_key_seconds", "test-backoff"); got != 30 {
		t.Errorf("after one queue stopped: oldest %v, want 30", got)
	}
	a()
	if got := value("hivekeeper_keys_in_backoff", "test-backoff"); got != -1 {
		t.Errorf("after both queues stopped: %v keys still exported", got)
	}
}
