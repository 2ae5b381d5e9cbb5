package replagent

import "context"

// stream is one running LogSource.Stream.
type stream struct {
	events chan SourcedEvent
	// done is closed when the source has returned, err then being what
	// it returned.
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

// startStream runs the source from position from.
func (a *Agent) startStream(ctx context.Context, from uint64) *stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &stream{events: make(chan SourcedEvent, 64), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(s.done)
		s.err = a.opts.Source.Stream(ctx, from, s.events)
	}()
	return s
}

// stop ends the stream and waits for its source; events it read ahead are
// dropped (the next stream reads them again from the applied position).
func (s *stream) stop() {
	s.cancel()
	<-s.done
}
