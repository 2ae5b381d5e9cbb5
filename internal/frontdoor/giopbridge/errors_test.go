package giopbridge

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

func TestExceptionFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		repoID    string
		minor     uint32
		completed giop.CompletionStatus
	}{
		{"unknown key", errUnknownKey, giop.RepoIDObjectNotExist, 0, giop.CompletedNo},
		{"malformed FT_REQUEST", fmt.Errorf("x: %w", ordered.ErrMalformed), RepoIDMarshal, 0, giop.CompletedNo},
		{"misaligned", errMisaligned, RepoIDMarshal, 0, giop.CompletedNo},
		{"no replicas", replhub.ErrNoReplicas, giop.RepoIDTransient, 0, giop.CompletedNo},
		{"too large", &replog.PayloadTooLargeError{Size: 2, Max: 1}, RepoIDImpLimit, 0, giop.CompletedNo},
		{"log full", &replog.LogFullError{Size: 1, Bytes: 2, Max: 2}, giop.RepoIDTransient, giop.OMGVMCID | 1, giop.CompletedNo},
		{"bad session", fmt.Errorf("%w: empty", replog.ErrBadSession), RepoIDBadParam, 0, giop.CompletedNo},
		{"reply expired", &replhub.ReplyExpiredError{Group: "g", Position: 3}, RepoIDNoResponse, 0, giop.CompletedYes},
		{"bad reply", errBadReply, RepoIDMarshal, 0, giop.CompletedYes},
		{"timeout", context.DeadlineExceeded, RepoIDTimeout, 0, giop.CompletedMaybe},
		{"log unavailable", errors.New("etcd: unavailable"), giop.RepoIDTransient, 0, giop.CompletedNo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := exceptionFor(tt.err)
			if got.RepositoryID != tt.repoID || got.Minor != tt.minor || got.Completed != tt.completed {
				t.Fatalf("exceptionFor(%v) = %v, want %s minor %#x %v", tt.err, got, tt.repoID, tt.minor, tt.completed)
			}
		})
	}
}
