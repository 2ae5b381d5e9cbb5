package frontdoor

import "testing"

func TestDecide(t *testing.T) {
	t.Parallel()
	again := Decision{Again: true, ReplicaFailed: true, Answer: AnswerUnreachable}
	elsewhere := Decision{Again: true, ReplicaFailed: true, Answer: AnswerBadGateway}
	for _, tc := range []struct {
		name string
		in   Attempt
		want Decision
	}{
		{"answered", Attempt{Outcome: Answered, N: 1, Method: "POST"}, Decision{Answer: AnswerRelay}},
		{"answered 5xx", Attempt{Outcome: Answered, N: 1, Failed: true}, Decision{ReplicaFailed: true, Answer: AnswerRelay}},
		{"answered on the last attempt", Attempt{Outcome: Answered, N: MaxAttempts}, Decision{Answer: AnswerRelay}},

		{"stale connection", Attempt{Outcome: Stale, N: 1, Method: "POST", Replayable: true}, Decision{Again: true, SameReplica: true}},
		{"stale connection at the attempt limit", Attempt{Outcome: Stale, N: MaxAttempts, Replayable: true}, Decision{Again: true, SameReplica: true}},
		{"stale connection, body consumed", Attempt{Outcome: Stale, N: 1, Method: "POST"}, Decision{Answer: AnswerBadGateway}},

		{"connect failed", Attempt{Outcome: NotSent, N: 1, Method: "POST", Replayable: true}, again},
		{"connect failed, second attempt", Attempt{Outcome: NotSent, N: 2, Method: "GET", Replayable: true}, again},
		{"connect failed, attempts exhausted", Attempt{Outcome: NotSent, N: MaxAttempts, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerUnreachable}},
		{"connect failed, body consumed", Attempt{Outcome: NotSent, N: 1, Method: "PUT"}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"GIOP not sent", Attempt{Outcome: NotSent, N: 1, Replayable: true}, again},

		{"GET sent, no response, unsent", Attempt{Outcome: NoResponse, N: 1, Method: "GET", Retry: RetryUnsent, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"GET sent, no response, default", Attempt{Outcome: NoResponse, N: 1, Method: "GET", Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"GET sent, no response, idempotent", Attempt{Outcome: NoResponse, N: 1, Method: "GET", Retry: RetryIdempotent, Replayable: true}, elsewhere},
		{"HEAD sent, no response, idempotent", Attempt{Outcome: NoResponse, N: 2, Method: "HEAD", Retry: RetryIdempotent, Replayable: true}, elsewhere},
		{"OPTIONS sent, no response, idempotent", Attempt{Outcome: NoResponse, N: 1, Method: "OPTIONS", Retry: RetryIdempotent, Replayable: true}, elsewhere},
		{"GET sent, no response, idempotent, attempts exhausted", Attempt{Outcome: NoResponse, N: MaxAttempts, Method: "GET", Retry: RetryIdempotent, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"GET with a body consumed, idempotent", Attempt{Outcome: NoResponse, N: 1, Method: "GET", Retry: RetryIdempotent}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"POST sent, no response, idempotent", Attempt{Outcome: NoResponse, N: 1, Method: "POST", Retry: RetryIdempotent, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"PUT sent, no response, idempotent", Attempt{Outcome: NoResponse, N: 1, Method: "PUT", Retry: RetryIdempotent, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"TRACE sent, no response, idempotent", Attempt{Outcome: NoResponse, N: 1, Method: "TRACE", Retry: RetryIdempotent, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"GIOP sent, no response, idempotent", Attempt{Outcome: NoResponse, N: 1, Retry: RetryIdempotent, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},

		{"response broke off", Attempt{Outcome: BadResponse, N: 1, Method: "GET", Retry: RetryIdempotent, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerBadGateway}},
		{"replica too slow", Attempt{Outcome: ReplicaTimeout, N: 1, Method: "GET", Retry: RetryIdempotent, Replayable: true}, Decision{ReplicaFailed: true, Answer: AnswerTimeout}},
		{"client trickled its body", Attempt{Outcome: ClientTimeout, N: 1, Method: "POST"}, Decision{Answer: AnswerTimeout}},
		{"client gone", Attempt{Outcome: ClientGone, N: 1, Method: "GET", Replayable: true}, Decision{Answer: AnswerNothing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Decide(tc.in); got != tc.want {
				t.Errorf("Decide(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

// TestDecideNeverBlamesTheClientSide: whatever else an attempt says, a
// timeout on the client's side or a client gone is never the replica's
// failure and never goes again.
func TestDecideNeverBlamesTheClientSide(t *testing.T) {
	t.Parallel()
	for _, o := range []Outcome{ClientTimeout, ClientGone} {
		for _, retry := range []string{"", RetryUnsent, RetryIdempotent} {
			for _, m := range []string{"", "GET", "POST"} {
				for n := 1; n <= MaxAttempts; n++ {
					a := Attempt{Outcome: o, N: n, Method: m, Retry: retry, Replayable: true, Failed: true}
					if d := Decide(a); d.ReplicaFailed || d.Again {
						t.Errorf("Decide(%+v) = %+v: blames the replica or goes again", a, d)
					}
				}
			}
		}
	}
}
