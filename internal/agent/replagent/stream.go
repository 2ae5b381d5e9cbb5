package replagent

import "context"

// stream is one running LogSource.Stream.
type stream struct {
	events chan SourcedEvent
	done   chan error
	cancel context.CancelFunc
}

// startStream runs the source from position from.
func (a *Agent) startStream(ctx context.Context, from uint64) *stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &stream{events: make(chan SourcedEvent, 64), done: make(chan error, 1), cancel: cancel}
	go func() { s.done <- a.opts.Source.Stream(ctx, from, s.events) }()
	return s
}

// stop ends the stream and waits for its source; events it read ahead are
// dropped (the next stream reads them again from the applied position).
// Calls after the first do nothing.
func (s *stream) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	<-s.done
	s.done <- nil // a closed stream reads as ended
}
