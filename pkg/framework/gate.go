package framework

// WriteGate is asked before every write. A non-nil error refuses the write.
// The binary installs one that refuses once this replica can no longer be
// sure it holds the leader-election lease, so a replica that was paused
// (SIGSTOP, a long GC, a frozen VM) and resumes after another took over
// does not write even once before it notices. It reaches the Writers
// through Deps.Gate.
type WriteGate func() error
