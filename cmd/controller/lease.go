package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
)

// errLeaseNotHeld refuses a write from a replica that cannot be sure it
// still leads.
var errLeaseNotHeld = errors.New("leader-election lease not renewed within the renew deadline: refusing to write")

// renewTracker wraps the Lease lock and records when this replica last
// wrote the lease successfully. client-go's elector only notices a lost
// lease on its next renewal attempt and then retries until the renew
// deadline; a replica that was paused longer than the lease would
// otherwise go on writing in that window while another replica leads.
type renewTracker struct {
	resourcelock.Interface
	clock clock.PassiveClock

	mu sync.Mutex
	// last is when the last successful acquisition or renewal was sent;
	// zero before the first one and once the lease is released.
	last time.Time
	// acquired is set by the first successful acquisition.
	acquired bool
}

func newRenewTracker(lock resourcelock.Interface, clk clock.PassiveClock) *renewTracker {
	return &renewTracker{Interface: lock, clock: clk}
}

// Create records a successful acquisition.
func (r *renewTracker) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return r.write(ctx, rec, r.Interface.Create)
}

// Update records a successful acquisition or renewal, and closes the gate
// before a release.
func (r *renewTracker) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return r.write(ctx, rec, r.Interface.Update)
}

// write sends rec through send.
//
// The time of a renewal is taken before the request is sent: the lease is
// ours from the moment the request left, but reading the answer can come
// after any pause (a GC, a descheduled thread, SIGSTOP), and a stamp taken
// then would keep writes allowed for a whole renew deadline counted from a
// moment when another replica may already lead.
//
// A record naming another holder is the release client-go writes on
// shutdown (holder empty, a lease of one second that another replica may
// take right after): the gate closes before it is sent.
func (r *renewTracker) write(ctx context.Context, rec resourcelock.LeaderElectionRecord, send func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	if rec.HolderIdentity != r.Identity() {
		r.mu.Lock()
		r.last = time.Time{}
		r.mu.Unlock()
		return send(ctx, rec)
	}
	sent := r.clock.Now()
	if err := send(ctx, rec); err != nil {
		return err
	}
	r.mu.Lock()
	r.last, r.acquired = sent, true
	r.mu.Unlock()
	return nil
}

// held reports whether this replica ever acquired the lease, and so
// whether client-go started the controllers.
func (r *renewTracker) held() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.acquired
}

// gate lets writes through only while the last successful renewal was sent
// less than validFor ago (the renew deadline, which is shorter than the
// lease duration, so no other replica can have acquired the lease yet).
func (r *renewTracker) gate(validFor time.Duration) framework.WriteGate {
	return func() error {
		r.mu.Lock()
		last := r.last
		r.mu.Unlock()
		if last.IsZero() || r.clock.Since(last) >= validFor {
			return errLeaseNotHeld
		}
		return nil
	}
}
