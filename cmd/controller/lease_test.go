package main

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
)

// fakeLock is a resourcelock that accepts every write; during, when set,
// runs while a write is in flight.
type fakeLock struct {
	resourcelock.Interface
	id     string
	during func(resourcelock.LeaderElectionRecord)
}

func (f *fakeLock) Identity() string { return f.id }
func (f *fakeLock) Create(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	return f.write(rec)
}
func (f *fakeLock) Update(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	return f.write(rec)
}
func (f *fakeLock) write(rec resourcelock.LeaderElectionRecord) error {
	if f.during != nil {
		f.during(rec)
	}
	return nil
}

const renewDeadline = 10 * time.Second

func TestWriteGateFollowsLeaseRenewals(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := newRenewTracker(&fakeLock{id: "me"}, clk)
	gate := r.gate(renewDeadline)
	if gate() == nil {
		t.Fatal("writes allowed before the lease was ever acquired")
	}
	if err := r.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	if gate() == nil || r.held() {
		t.Fatal("a write of another holder's record counted as our renewal")
	}
	if err := r.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := gate(); err != nil {
		t.Fatalf("writes refused right after acquiring: %v", err)
	}
	// A paused replica: no renewal for the renew deadline.
	clk.SetTime(clk.Now().Add(renewDeadline))
	if gate() == nil {
		t.Fatal("writes allowed although the last renewal is as old as the renew deadline")
	}
	if err := r.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := gate(); err != nil {
		t.Fatalf("writes refused after a renewal: %v", err)
	}
}

// leadingTracker is a tracker on a fake lock and clock that has just
// acquired the lease, and its gate.
func leadingTracker(t *testing.T) (*renewTracker, *fakeLock, *clocktesting.FakePassiveClock, framework.WriteGate) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	lock := &fakeLock{id: "me"}
	r := newRenewTracker(lock, clk)
	if err := r.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	return r, lock, clk, r.gate(renewDeadline)
}

// TestWriteGateCountsFromWhenTheRenewalWasSent: a pause between the
// renewal reaching the API server and this process reading the answer
// must not extend the time writes are allowed. The renew deadline counts
// from when the renewal was sent.
func TestWriteGateCountsFromWhenTheRenewalWasSent(t *testing.T) {
	r, lock, clk, gate := leadingTracker(t)
	// The renewal lands, then the process is paused for the whole renew
	// deadline before it reads the answer.
	lock.during = func(resourcelock.LeaderElectionRecord) { clk.SetTime(clk.Now().Add(renewDeadline)) }
	if err := r.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if gate() == nil {
		t.Fatal("writes allowed a renew deadline after the renewal was sent: another replica may lead by now")
	}
}

// TestWriteGateClosesBeforeTheLeaseIsReleased: on shutdown client-go
// releases the lease (an empty holder with a one-second lease), and
// another replica may take it at once. No write may pass from the moment
// the release is sent.
func TestWriteGateClosesBeforeTheLeaseIsReleased(t *testing.T) {
	r, lock, _, gate := leadingTracker(t)
	var whileReleasing error
	lock.during = func(resourcelock.LeaderElectionRecord) { whileReleasing = gate() }
	if err := r.Update(context.Background(), resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	if whileReleasing == nil {
		t.Error("writes allowed while the release was being sent")
	}
	if gate() == nil {
		t.Error("writes allowed after the lease was released")
	}
}

// leaseLock is a real Lease lock on a fake clientset, tracked.
func leaseLock(id string) *renewTracker {
	return newRenewTracker(&resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "hivekeeper-system", Name: "hivekeeper-leader"},
		Client:     fake.NewClientset().CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}, clock.RealClock{})
}

func electionOptions(grace time.Duration) options {
	return options{leaseDuration: 3 * time.Second, renewDeadline: 2 * time.Second, retryPeriod: 100 * time.Millisecond, shutdownGrace: grace, leaderElectID: "hivekeeper-leader"}
}

// TestLeaderElectionWaitsForTheControllers: on SIGTERM client-go stops
// leading and returns without waiting for the controllers it started.
// runWithLeaderElection must wait for them and return their result (run
// with -race, the result was a data race before).
func TestLeaderElectionWaitsForTheControllers(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	errStopped := errors.New("controllers stopped")
	started := make(chan struct{})
	run := func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return errStopped
	}
	done := make(chan error, 1)
	go func() { done <- runWithLeaderElection(ctx, electionOptions(time.Minute), leaseLock("me"), nil, run) }()
	<-started
	stop()
	if err := <-done; !errors.Is(err, errStopped) {
		t.Fatalf("runWithLeaderElection returned %v, want the controllers' result %v", err, errStopped)
	}
}

// TestLeaderElectionWaitIsBounded: controllers that do not stop within the
// shutdown grace period are not waited for longer, and that is an error.
func TestLeaderElectionWaitIsBounded(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	run := func(context.Context) error {
		close(started)
		<-release
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- runWithLeaderElection(ctx, electionOptions(100*time.Millisecond), leaseLock("me"), nil, run)
	}()
	<-started
	stop()
	if err := <-done; err == nil {
		t.Fatal("runWithLeaderElection returned nil although the controllers never stopped")
	}
}

// TestStoppedBeforeLeadingDoesNotWait: a standby replica that never led
// has no controllers to wait for.
func TestStoppedBeforeLeadingDoesNotWait(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	stop()
	run := func(context.Context) error {
		t.Error("controllers started although the context was cancelled before leading")
		return nil
	}
	if err := runWithLeaderElection(ctx, electionOptions(time.Hour), leaseLock("me"), nil, run); err != nil {
		t.Fatalf("a stop before leading is a clean exit, got %v", err)
	}
}
