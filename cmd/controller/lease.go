package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/hivekeeper/hivekeeper/pkg/controller"
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

	mu   sync.Mutex
	last time.Time // monotonic; zero until the lease is first acquired
}

// Create records a successful acquisition.
func (r *renewTracker) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := r.Interface.Create(ctx, rec)
	r.stamp(err, rec)
	return err
}

// Update records a successful acquisition or renewal.
func (r *renewTracker) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := r.Interface.Update(ctx, rec)
	r.stamp(err, rec)
	return err
}

func (r *renewTracker) stamp(err error, rec resourcelock.LeaderElectionRecord) {
	if err != nil || rec.HolderIdentity != r.Identity() {
		return
	}
	r.mu.Lock()
	r.last = time.Now()
	r.mu.Unlock()
}

// gate lets writes through only while the last successful renewal is more
// recent than validFor (the renew deadline, which is shorter than the lease
// duration, so no other replica can have acquired the lease yet).
func (r *renewTracker) gate(validFor time.Duration) controller.WriteGate {
	return func() error {
		r.mu.Lock()
		last := r.last
		r.mu.Unlock()
		if last.IsZero() || time.Since(last) >= validFor {
			return errLeaseNotHeld
		}
		return nil
	}
}
