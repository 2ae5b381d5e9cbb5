package frontdoor

import (
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// This file is the front doors' one attempt policy: after each attempt of
// a proxied call (HTTP on either engine, GIOP), Decide says whether the
// call goes again, whether the replica is blamed, and what the client is
// answered. The front doors only observe outcomes and carry decisions out.
// Decide is pure.

// The values of a group's retry setting (protocol.Group.Retry).
const (
	// RetryUnsent sends a call again only when it provably never reached
	// its replica: connecting failed, or nothing of it was written.
	RetryUnsent = protocol.RetryUnsent
	// RetryIdempotent also sends again GET, HEAD and OPTIONS calls without
	// a body consumed that received no response byte. (Calls of protocols
	// without methods, such as GIOP, are judged as RetryUnsent.)
	RetryIdempotent = protocol.RetryIdempotent
)

// DefaultRetry is the retry setting of a group that sets none.
const DefaultRetry = registry.DefaultRetry

// MaxAttempts bounds the replicas one proxied call is sent to.
const MaxAttempts = 3

// Outcome is how one attempt of a proxied call ended.
type Outcome uint8

const (
	// Answered: the replica's response started (its status line, or its
	// Reply, arrived).
	Answered Outcome = iota
	// Stale: a kept-alive connection turned out closed by the replica
	// before anything of the call was written on it. Not the replica's
	// failure; the call goes again to the same replica on a fresh
	// connection.
	Stale
	// NotSent: connecting to the replica failed, or the replica refused
	// the call without running it (GIOP CloseConnection): it provably
	// did not run.
	NotSent
	// NoResponse: the call was written, whole or in part, and the
	// connection failed before any byte of a response came.
	NoResponse
	// BadResponse: the response started and then broke off, or could not
	// be read.
	BadResponse
	// ReplicaTimeout: the request timeout passed while the front door
	// waited for the replica (to take the call or to answer it).
	ReplicaTimeout
	// ClientTimeout: the request timeout passed while the front door
	// waited for the client to send its request (a body trickled in).
	ClientTimeout
	// ClientGone: the client went away (closed, reset, cancelled the
	// call) or sent a body that breaks its framing.
	ClientGone
)

var outcomeNames = [...]string{"answered", "stale", "not-sent", "no-response", "bad-response", "replica-timeout", "client-timeout", "client-gone"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome(?)"
}

// Attempt is what Decide knows of one attempt.
type Attempt struct {
	Outcome Outcome
	// N is the number of replicas the call was sent to so far, this
	// attempt's included (from 1).
	N int
	// Method is the HTTP method; "" for protocols without methods.
	Method string
	// Retry is the group's retry setting ("" means DefaultRetry).
	Retry string
	// Replayable: the front door can send the request again (its body,
	// if it has one, was not consumed).
	Replayable bool
	// Failed: for Answered, the answer itself is a failure (a 5xx, or a
	// system exception that says so).
	Failed bool
}

// Answer is what the client gets when a call is not sent again.
type Answer uint8

const (
	// AnswerRelay: the replica's answer.
	AnswerRelay Answer = iota
	// AnswerUnreachable: no replica could be reached (HTTP 503 no_replica,
	// GIOP TRANSIENT).
	AnswerUnreachable
	// AnswerBadGateway: the call may have run and failed (HTTP 502, GIOP
	// COMM_FAILURE).
	AnswerBadGateway
	// AnswerTimeout: the request timeout passed (HTTP 504, GIOP
	// TIMEOUT).
	AnswerTimeout
	// AnswerNothing: nobody is left to answer.
	AnswerNothing
)

// Decision is what to do after an attempt.
type Decision struct {
	// Again: send the call again — to the same replica on a fresh
	// connection when SameReplica, otherwise to another replica.
	Again, SameReplica bool
	// ReplicaFailed: count the attempt as the replica's failure (passive
	// health, the strategy's observer).
	ReplicaFailed bool
	// Answer is what the client gets when the call does not go again.
	Answer Answer
}

// Decide applies the attempt policy to a:
//
//   - a call that provably did not run (Stale, NotSent) goes again while
//     replayable and fewer than MaxAttempts replicas were tried; a failed
//     connect is the replica's failure, a stale kept-alive connection is
//     not;
//   - a call that may have run (NoResponse) goes again to another replica
//     only under RetryIdempotent, for GET, HEAD and OPTIONS, replayable,
//     within MaxAttempts; it is the replica's failure either way;
//   - a broken response or the replica's timeout is the replica's failure
//     and is never sent again;
//   - a timeout on the client's side of the call (ClientTimeout) or a
//     client gone is never the replica's failure.
func Decide(a Attempt) Decision {
	switch a.Outcome {
	case Answered:
		return Decision{ReplicaFailed: a.Failed, Answer: AnswerRelay}
	case Stale:
		if a.Replayable {
			return Decision{Again: true, SameReplica: true}
		}
		return Decision{Answer: AnswerBadGateway}
	case NotSent:
		d := Decision{ReplicaFailed: true, Answer: AnswerUnreachable}
		switch {
		case !a.Replayable:
			d.Answer = AnswerBadGateway
		case a.N < MaxAttempts:
			d.Again = true
		}
		return d
	case NoResponse:
		d := Decision{ReplicaFailed: true, Answer: AnswerBadGateway}
		d.Again = a.Replayable && a.N < MaxAttempts && retryIdempotent(a.Retry) && idempotentMethod(a.Method)
		return d
	case BadResponse:
		return Decision{ReplicaFailed: true, Answer: AnswerBadGateway}
	case ReplicaTimeout:
		return Decision{ReplicaFailed: true, Answer: AnswerTimeout}
	case ClientTimeout:
		return Decision{Answer: AnswerTimeout}
	default: // ClientGone
		return Decision{Answer: AnswerNothing}
	}
}

func retryIdempotent(setting string) bool { return setting == RetryIdempotent }

// idempotentMethod reports whether RetryIdempotent replays calls of
// method (RFC 9110 §9.2.2, the safe methods but TRACE, which front doors
// have no reason to replay).
func idempotentMethod(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS":
		return true
	}
	return false
}
