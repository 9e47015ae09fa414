package controller

import (
	"context"
)

// WriteGate is asked before every write. A non-nil error refuses the write.
// The binary installs one that refuses once this replica can no longer be
// sure it holds the leader-election lease, so a replica that was paused
// (SIGSTOP, a long GC, a frozen VM) and resumes after another took over
// does not write even once before it notices.
type WriteGate func() error

type gateKey struct{}

// WithWriteGate returns a context whose writes pass through gate. The
// controllers' contexts derive from the one given to app.Start, so every
// write helper sees it.
func WithWriteGate(ctx context.Context, gate WriteGate) context.Context {
	return context.WithValue(ctx, gateKey{}, gate)
}

// checkGate runs the context's gate, if any.
func checkGate(ctx context.Context) error {
	if g, ok := ctx.Value(gateKey{}).(WriteGate); ok && g != nil {
		return g()
	}
	return nil
}
