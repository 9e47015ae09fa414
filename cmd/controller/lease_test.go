package main

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resourcelock that accepts every write.
type fakeLock struct {
	resourcelock.Interface
	id string
}

func (f *fakeLock) Identity() string { return f.id }
func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return nil
}
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	return nil
}

func TestWriteGateFollowsLeaseRenewals(t *testing.T) {
	r := &renewTracker{Interface: &fakeLock{id: "me"}}
	gate := r.gate(50 * time.Millisecond)
	if gate() == nil {
		t.Fatal("writes allowed before the lease was ever acquired")
	}
	if err := r.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	if gate() == nil {
		t.Fatal("a write of another holder's record counted as our renewal")
	}
	if err := r.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := gate(); err != nil {
		t.Fatalf("writes refused right after acquiring: %v", err)
	}
	// A paused replica: no renewal for longer than the renew deadline.
	r.mu.Lock()
	r.last = r.last.Add(-time.Second)
	r.mu.Unlock()
	if gate() == nil {
		t.Fatal("writes allowed although the last renewal is older than the renew deadline")
	}
	if err := r.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := gate(); err != nil {
		t.Fatalf("writes refused after a renewal: %v", err)
	}
}
