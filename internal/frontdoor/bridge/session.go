package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// How a request is identified in the log (its session and sequence
// number), in order of precedence:
//
//   - Fulcrum-Session and Fulcrum-Sequence (protocol-aware clients): the
//     session as sent (1 to protocol.MaxSessionLength characters of UTF-8,
//     not starting with a reserved prefix) and the sequence number, a
//     decimal uint64. A retry with the same pair, through any front door,
//     gets the original reply.
//   - Idempotency-Key alone: the session is IdempotencySessionPrefix and the
//     key, the sequence number 0, so that the key alone identifies the
//     request (at most MaxIdempotencyKeyLength characters).
//   - Neither: the client's connection is the session
//     (ConnectionSessionPrefix and a random id drawn when the connection
//     opens) and the sequence number counts the connection's ordered
//     requests from 1. A retry on a new connection is a new request.
//
// The reserved prefixes keep the three kinds apart: a Fulcrum-Session that
// starts with one is refused.
const (
	IdempotencySessionPrefix = "idem:"
	ConnectionSessionPrefix  = "conn:"
	// MaxIdempotencyKeyLength bounds an Idempotency-Key, in characters:
	// with its prefix it is a session id.
	MaxIdempotencyKeyLength = protocol.MaxSessionLength - len(IdempotencySessionPrefix)
)

// identity is a request's identity in the log.
type identity struct {
	// Session is "" only for a read-only call of a client with none
	// (no headers, no connection session).
	Session string
	Seq     uint64
}

// HeaderError is a request header the bridge refuses (400 bad_request).
type HeaderError struct {
	Header, Value string
	// Reason says what is wrong and what is allowed.
	Reason string
}

func (e *HeaderError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("bridge: header %s: %s", e.Header, e.Reason)
	}
	v := e.Value
	if utf8.RuneCountInString(v) > 40 {
		v = string([]rune(v)[:40]) + "…"
	}
	return fmt.Sprintf("bridge: header %s: value %q: %s", e.Header, v, e.Reason)
}

// identify reads the identity of a request with header h from its
// session headers, or its connection's session conn (nil: none). ordered
// says whether the request goes to the log: it then needs a sequence
// number, and takes the connection's next one when it has no headers; a
// read-only call only needs the session (Fulcrum-Sequence is checked
// when present, but not required).
func identify(h http.Header, conn *connSession, ordered bool) (identity, error) {
	session, hasSession, err := single(h, protocol.HeaderSession)
	if err != nil {
		return identity{}, err
	}
	seqText, hasSeq, err := single(h, protocol.HeaderSequence)
	if err != nil {
		return identity{}, err
	}
	key, hasKey, err := single(h, protocol.HeaderIdempotencyKey)
	if err != nil {
		return identity{}, err
	}
	switch {
	case hasSession:
		if err := checkSession(session); err != nil {
			return identity{}, err
		}
		id := identity{Session: session}
		if !hasSeq {
			if ordered {
				return identity{}, &HeaderError{Header: protocol.HeaderSequence,
					Reason: "missing: required with " + protocol.HeaderSession + " (a decimal integer in [0, 2^64), fresh for every call of the session)"}
			}
			return id, nil
		}
		if id.Seq, err = parseSeq(seqText); err != nil {
			return identity{}, err
		}
		return id, nil
	case hasSeq:
		return identity{}, &HeaderError{Header: protocol.HeaderSequence, Value: seqText,
			Reason: "sent without " + protocol.HeaderSession + ": a sequence number is only meaningful within a session"}
	case hasKey:
		if !utf8.ValidString(key) {
			return identity{}, &HeaderError{Header: protocol.HeaderIdempotencyKey, Value: key, Reason: "not valid UTF-8"}
		}
		if n := utf8.RuneCountInString(key); n > MaxIdempotencyKeyLength {
			return identity{}, &HeaderError{Header: protocol.HeaderIdempotencyKey, Value: key,
				Reason: fmt.Sprintf("%d characters: must be 1 to %d characters", n, MaxIdempotencyKeyLength)}
		}
		return identity{Session: IdempotencySessionPrefix + key}, nil
	case conn != nil:
		id := identity{Session: conn.id}
		if ordered {
			id.Seq = conn.seq.Add(1)
		}
		return id, nil
	}
	return identity{}, nil
}

// single returns the one value of header name, trimmed; present is false
// when the request has none. Several values, or an empty one, are refused.
func single(h http.Header, name string) (v string, present bool, err error) {
	vs := h[name]
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, &HeaderError{Header: name, Reason: fmt.Sprintf("sent %d times: must be sent once", len(vs))}
	}
	v = strings.TrimSpace(vs[0])
	if v == "" {
		return "", true, &HeaderError{Header: name, Reason: "empty: must have a value when sent"}
	}
	return v, true, nil
}

// checkSession refuses a Fulcrum-Session that is too long, not UTF-8 or
// starts with a reserved prefix.
func checkSession(s string) error {
	if !utf8.ValidString(s) {
		return &HeaderError{Header: protocol.HeaderSession, Value: s, Reason: "not valid UTF-8"}
	}
	if n := utf8.RuneCountInString(s); n > protocol.MaxSessionLength {
		return &HeaderError{Header: protocol.HeaderSession, Value: s,
			Reason: fmt.Sprintf("%d characters: at most %d allowed", n, protocol.MaxSessionLength)}
	}
	for _, p := range []string{IdempotencySessionPrefix, ConnectionSessionPrefix} {
		if strings.HasPrefix(s, p) {
			return &HeaderError{Header: protocol.HeaderSession, Value: s,
				Reason: fmt.Sprintf("starts with %q: the prefixes %q and %q are reserved for the bridge's own sessions", p, IdempotencySessionPrefix, ConnectionSessionPrefix)}
		}
	}
	return nil
}

// parseSeq parses a Fulcrum-Sequence.
func parseSeq(v string) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, &HeaderError{Header: protocol.HeaderSequence, Value: v, Reason: "must be a decimal integer in [0, 2^64)"}
	}
	return n, nil
}

// connSession is the session of one client connection: a random id and
// the count of its ordered requests (the sequence number of the next one
// minus one). Safe for concurrent use (HTTP/2 streams).
type connSession struct {
	id  string
	seq atomic.Uint64
}

// connSessionIDBytes is the random part of a connection session's id.
const connSessionIDBytes = 12

func newConnSession() *connSession {
	var b [connSessionIDBytes]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &connSession{id: ConnectionSessionPrefix + hex.EncodeToString(b[:])}
}

type connSessionKey struct{}

// withConnSession gives a new connection's context its session
// (http.Server.ConnContext).
func withConnSession(ctx context.Context) context.Context {
	return context.WithValue(ctx, connSessionKey{}, newConnSession())
}

// connSessionOf returns the session of the connection ctx belongs to (nil:
// none).
func connSessionOf(ctx context.Context) *connSession {
	c, _ := ctx.Value(connSessionKey{}).(*connSession)
	return c
}
