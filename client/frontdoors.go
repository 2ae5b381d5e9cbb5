package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// doorSet is one group's front doors on several balancer instances
// (Options.FrontDoors). Immutable but for current.
type doorSet struct {
	// keys are the front doors in the order given; keys[0] also keys the
	// set's one binding.
	keys []doorKey
	// current is the index of the front door that last answered: calls
	// through a front door go there first.
	current atomic.Int32
}

// newDoorSets parses Options.FrontDoors into the set each of its front
// doors belongs to. Every entry must be an http(s) URL with a host and no
// path beyond "/", query or fragment.
func newDoorSets(urls []string) (map[doorKey]*doorSet, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	set := &doorSet{}
	m := make(map[doorKey]*doorSet, len(urls))
	for i, s := range urls {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("client: Options.FrontDoors[%d] %q: must be a front door's base URL, http(s)://host:port", i, s)
		}
		k := keyOf(u)
		if m[k] != nil {
			continue // listed twice
		}
		m[k] = set
		set.keys = append(set.keys, k)
	}
	return m, nil
}

// frontDoorCodes are the error codes of a fulcrum front door's own 503
// (internal/frontdoor/httpdoor: no_replica, overloaded).
var frontDoorCodes = []string{"no_replica", "overloaded"}

// maxErrorPeek bounds what is read of a 503's body to tell whose it is.
const maxErrorPeek = 4 << 10

// ownUnavailable reports whether resp, a 503 from a front door, is the
// front door's own — fulcrum's JSON error with a front door's code, naming
// in its body the group Fulcrum-Group names (neither does while the group
// is starting) — rather than a replica's that a per-request front door
// passed on. It reads at most maxErrorPeek bytes
// of the body and puts them back, so resp can still be returned whole.
func ownUnavailable(resp *http.Response) bool {
	if resp.StatusCode != http.StatusServiceUnavailable {
		return false
	}
	group := resp.Header.Get(protocol.HeaderGroup)
	peek, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorPeek))
	resp.Body = &peekedBody{Reader: io.MultiReader(bytes.NewReader(peek), resp.Body), Closer: resp.Body}
	if err != nil {
		return false
	}
	var body struct {
		Error struct {
			Code  string `json:"code"`
			Group string `json:"group"`
		} `json:"error"`
	}
	if json.Unmarshal(peek, &body) != nil || body.Error.Group != group {
		return false
	}
	for _, c := range frontDoorCodes {
		if body.Error.Code == c {
			return true
		}
	}
	return false
}

// peekedBody is a body whose first bytes were read and put back.
type peekedBody struct {
	io.Reader
	io.Closer
}

// errFrontDoors wraps the error of a Transport whose Options.FrontDoors is
// invalid; every call returns it.
var errFrontDoors = errors.New("client: invalid options")
