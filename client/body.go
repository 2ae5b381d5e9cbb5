package client

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// replay hands out a request's body for each attempt of one RoundTrip. A
// body is replayable when it is empty, when the request has GetBody, or
// when it fits in the buffer limit; a bigger body is streamed once and
// cannot follow a redirect. Not safe for concurrent use.
type replay struct {
	// orig is the request's body for the first attempt.
	orig io.ReadCloser
	// get returns a fresh copy; nil when the body cannot be replayed.
	get func() (io.ReadCloser, error)
	// length is the body's length when buffered, else -1.
	length int64
	empty  bool
	used   bool
}

// newReplay prepares req's body. It takes over closing req.Body.
func newReplay(req *http.Request, limit int64) (replay, error) {
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		return replay{orig: req.Body, empty: true, length: -1}, nil
	case req.GetBody != nil:
		return replay{orig: req.Body, get: req.GetBody, length: -1}, nil
	case req.ContentLength > limit:
		return replay{orig: req.Body, length: -1}, nil
	}
	buf, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	if err != nil {
		req.Body.Close()
		return replay{}, fmt.Errorf("client: read request body: %w", err)
	}
	if int64(len(buf)) > limit {
		// Too big to keep: stream what was read and the rest, once.
		return replay{orig: readCloser{io.MultiReader(bytes.NewReader(buf), req.Body), req.Body}, length: -1}, nil
	}
	req.Body.Close()
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	body, _ := get()
	return replay{orig: body, get: get, length: int64(len(buf))}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// canReplay reports whether another attempt can send the body again.
func (r *replay) canReplay() bool { return r.empty || r.get != nil }

// next returns the body for the next attempt.
func (r *replay) next() (io.ReadCloser, error) {
	if r.empty {
		return r.orig, nil
	}
	if !r.used {
		r.used = true
		return r.orig, nil
	}
	if r.get == nil {
		return nil, errNotReplayable
	}
	return r.get()
}

// close closes the first attempt's body if no attempt took it.
func (r *replay) close() {
	if !r.used && !r.empty && r.orig != nil {
		r.orig.Close()
	}
}
