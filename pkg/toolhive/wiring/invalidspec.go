package wiring

// InvalidSpecError is user input a builder cannot build from. The sync
// turns it into a condition and a Warning event and does not retry:
// retrying cannot fix user input, the next spec change will.
type InvalidSpecError struct {
	// Condition is the condition type that reports it.
	Condition string
	// Reason is the condition and event reason.
	Reason string
	// Message explains what is wrong, naming the field.
	Message string
}

func (e *InvalidSpecError) Error() string { return e.Message }
