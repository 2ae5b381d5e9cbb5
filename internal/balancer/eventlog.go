package balancer

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// EventReplay is how many of the latest events the balancer keeps for
// subscribers that reconnect (GET /v1/events with Last-Event-ID).
const EventReplay = 1000

// eventLog numbers every event of every group from one balancer-wide
// sequence (1, 2, 3, ...) and keeps the last cap of them in a ring. An
// event's id is "<instance>-<seq>" (EventID), so that a client that
// reconnects to another instance of a cluster is told apart from one that
// resumes here. Appending never blocks on readers: readers keep their own
// cursor and learn by a closed channel that more has come; a reader that
// falls more than cap events behind is told so (Since's ok) instead of
// being waited for. Safe for concurrent use; the zero value is not usable
// (newEventLog).
type eventLog struct {
	name string // the instance's name, the ids' prefix
	mu   sync.Mutex
	ring []Event // ring[(seq-1)%len(ring)] holds event seq while it is kept
	seq  uint64  // the seq of the latest event; 0 before the first
	wake chan struct{}
}

func newEventLog(name string, capacity int) *eventLog {
	return &eventLog{name: name, ring: make([]Event, capacity), wake: make(chan struct{})}
}

// eventsName is the prefix of the event ids: the instance's name
// (Options.Instance), else the host name, else "fulcrum".
func eventsName(instance string) string {
	if instance != "" {
		return instance
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "fulcrum"
}

// id is the event id of seq.
func (l *eventLog) id(seq uint64) string {
	return l.name + "-" + strconv.FormatUint(seq, 10)
}

// parse reads the seq of an id of this log; ok is false when id is not
// "<name>-<seq>" with this log's name (another instance's id, or not an
// id at all).
func (l *eventLog) parse(id string) (seq uint64, ok bool) {
	n, found := strings.CutPrefix(id, l.name+"-")
	if !found {
		return 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != n {
		return 0, false
	}
	return seq, true
}

// append gives ev the next seq and id, keeps it, wakes the readers and
// returns it.
func (l *eventLog) append(ev Event) Event {
	l.mu.Lock()
	l.seq++
	ev.Seq, ev.ID = l.seq, l.id(l.seq)
	l.ring[(l.seq-1)%uint64(len(l.ring))] = ev
	wake := l.wake
	l.wake = make(chan struct{})
	l.mu.Unlock()
	close(wake)
	return ev
}

// Since returns the events after seq after, oldest first, and a channel
// closed at the next append. ok is false when the events right after
// after are no longer kept (after is older than the ring) or never were
// (after is ahead of the sequence): the reader must then resynchronise
// from a full status, whose seq is last. With ok, last is the seq of the
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
	for seq := after + 1; seq <= l.seq; seq++ {
		evs = append(evs, l.ring[(seq-1)%uint64(len(l.ring))])
	}
	return evs, l.seq, true, l.wake
}
