package balancer

import "sync"

// EventReplay is how many of the latest events the balancer keeps for
// subscribers that reconnect (GET /v1/events with Last-Event-ID).
const EventReplay = 1000

// eventLog numbers every event of every group from one balancer-wide
// sequence (1, 2, 3, ...) and keeps the last cap of them in a ring.
// Appending never blocks on readers: readers keep their own cursor and
// learn by a closed channel that more has come; a reader that falls more
// than cap events behind is told so (Since's ok) instead of being waited
// for. Safe for concurrent use; the zero value is not usable (newEventLog).
type eventLog struct {
	mu   sync.Mutex
	ring []Event // ring[(id-1)%len(ring)] holds event id while it is kept
	seq  uint64  // the id of the latest event; 0 before the first
	wake chan struct{}
}

func newEventLog(capacity int) *eventLog {
	return &eventLog{ring: make([]Event, capacity), wake: make(chan struct{})}
}

// append gives ev the next id, keeps it, wakes the readers and returns it.
func (l *eventLog) append(ev Event) Event {
	l.mu.Lock()
	l.seq++
	ev.ID = l.seq
	l.ring[(l.seq-1)%uint64(len(l.ring))] = ev
	wake := l.wake
	l.wake = make(chan struct{})
	l.mu.Unlock()
	close(wake)
	return ev
}

// Since returns the events after id after, oldest first, and a channel
// closed at the next append. ok is false when the events right after
// after are no longer kept (after is older than the ring) or never were
// (after is ahead of the sequence): the reader must then resynchronise
// from a full status, whose id is last. With ok, last is the id of the
// last event returned (after if none).
func (l *eventLog) Since(after uint64) (evs []Event, last uint64, ok bool, next <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	oldest := uint64(1)
	if n := uint64(len(l.ring)); l.seq > n {
		oldest = l.seq - n + 1
	}
	if after > l.seq || after+1 < oldest {
		return nil, l.seq, false, l.wake
	}
	for id := after + 1; id <= l.seq; id++ {
		evs = append(evs, l.ring[(id-1)%uint64(len(l.ring))])
	}
	return evs, l.seq, true, l.wake
}
