package replagent

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Reply cache bounds: the agent keeps the last DefaultKeepReplies replies
// or the replies of the last DefaultKeepFor, whichever is fewer.
const (
	DefaultKeepReplies = 10_000
	DefaultKeepFor     = 10 * time.Minute
)

// replyCache keeps the latest replies by position, for reply requests: a
// ring of at most max replies, each dropped once older than keepFor. It
// reads the time only from its callers. Not safe for concurrent use.
type replyCache struct {
	max     int
	keepFor time.Duration
	ring    []cachedReply // oldest at head
	head, n int
	byPos   map[uint64]int // position → index in ring
}

type cachedReply struct {
	at    time.Time
	reply protocol.ReplicaReply
}

func newReplyCache(max int, keepFor time.Duration) *replyCache {
	return &replyCache{max: max, keepFor: keepFor, ring: make([]cachedReply, max), byPos: make(map[uint64]int)}
}

// put keeps r (r.Position) as of now, dropping the oldest reply when the
// cache is full and every reply older than keepFor.
func (c *replyCache) put(r protocol.ReplicaReply, now time.Time) {
	c.expire(now)
	if c.max == 0 {
		return
	}
	if c.n == c.max {
		c.dropOldest()
	}
	i := (c.head + c.n) % c.max
	c.ring[i] = cachedReply{at: now, reply: r}
	c.byPos[r.Position] = i
	c.n++
}

// get returns the reply at pos when it is kept as of now.
func (c *replyCache) get(pos uint64, now time.Time) (protocol.ReplicaReply, bool) {
	c.expire(now)
	i, ok := c.byPos[pos]
	if !ok {
		return protocol.ReplicaReply{}, false
	}
	return c.ring[i].reply, true
}

// expire drops the replies kept for keepFor or longer as of now.
func (c *replyCache) expire(now time.Time) {
	for c.n > 0 && now.Sub(c.ring[c.head].at) >= c.keepFor {
		c.dropOldest()
	}
}

func (c *replyCache) dropOldest() {
	old := &c.ring[c.head]
	if i, ok := c.byPos[old.reply.Position]; ok && i == c.head {
		delete(c.byPos, old.reply.Position)
	}
	*old = cachedReply{}
	c.head = (c.head + 1) % c.max
	c.n--
}
