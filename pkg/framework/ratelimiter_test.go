package framework

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
)

// A failing key backs off from 5ms, doubling, up to 5 minutes, and
// Forget resets it; a burst of other keys within the token bucket's 100
// adds no delay of its own. The delays are what When returns, not
// measured.
func TestRateLimiterBackoff(t *testing.T) {
	rl := NewRateLimiter()
	key := cache.NewObjectName("team-a", "fetch")
	for i, want := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond} {
		if got := rl.When(key); got != want {
			t.Fatalf("failure %d: delay %v, want %v", i+1, got, want)
		}
	}
	for range 30 {
		rl.When(key)
	}
	if got := rl.When(key); got != 5*time.Minute {
		t.Errorf("after many failures: delay %v, want the 5m cap", got)
	}
	if n := rl.NumRequeues(key); n != 35 {
		t.Errorf("requeues %d, want 35", n)
	}
	rl.Forget(key)
	if got := rl.When(key); got != 5*time.Millisecond {
		t.Errorf("after Forget: delay %v, want 5ms", got)
	}
}
