package registry

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ValidateAddress checks a replica address for a group of protocol proto.
func ValidateAddress(proto, addr string) error {
	if addr == "" {
		return errors.New("must not be empty")
	}
	if len(addr) > 2048 {
		return errors.New("must be at most 2048 characters")
	}
	switch proto {
	case protocol.ProtocolHTTP:
		u, err := url.Parse(addr)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("must be an absolute http:// or https:// URL such as http://10.0.0.5:9001")
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return errors.New("must be a base URL without user info, query or fragment")
		}
	case protocol.ProtocolGIOP:
		_, err := ParseGIOPAddress(addr)
		return err
	default:
		if err := validHostPort(addr); err != nil {
			return fmt.Errorf("must be host:port (%v)", err)
		}
	}
	return nil
}

// NormalizeAddress is the form addresses are compared in: lower-case
// scheme and host, no trailing slash; for GIOP references (IOR: and
// corbaloc:) the endpoint and object key of the first IIOP profile.
func NormalizeAddress(addr string) string {
	if n, ok := normalizeGIOPAddress(addr); ok {
		return n
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return strings.ToLower(addr)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimRight(u.Path, "/")
	return u.String()
}

// ValidateWeight checks a replica weight (after the default of 1).
func ValidateWeight(w float64) error {
	if math.IsNaN(w) || w <= 0 || w > 1e6 {
		return errors.New("must be in (0, 1000000]")
	}
	return nil
}

// ValidateMonitor checks a monitor spec; errors are *protocol.FieldError
// with fields relative to "monitor".
func ValidateMonitor(m protocol.MonitorSpec) error {
	switch m.Mode {
	case "", protocol.MonitorPush:
		if m.URL != "" {
			return &protocol.FieldError{Field: "monitor.url", Value: m.URL, Allowed: "is only allowed with mode pull"}
		}
	case protocol.MonitorPull:
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &protocol.FieldError{Field: "monitor.url", Value: m.URL, Allowed: "must be an absolute http:// URL in pull mode"}
		}
	default:
		return &protocol.FieldError{Field: "monitor.mode", Value: m.Mode, Allowed: "must be push or pull"}
	}
	if m.Interval != 0 && (m.Interval.D() < 10*time.Millisecond || m.Interval.D() > time.Hour) {
		return &protocol.FieldError{Field: "monitor.interval", Value: m.Interval.String(), Allowed: "must be a duration in [10ms, 1h]"}
	}
	return nil
}

// NewToken returns a fresh unguessable token (256 bits) and its hash.
func NewToken() (token, hash string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("registry: crypto/rand failed: " + err.Error())
	}
	token = "frt_" + base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token)
}

// HashToken is the stored form of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// TokenMatches compares a token with a stored hash in constant time.
func TokenMatches(token, hash string) bool {
	h := HashToken(token)
	return subtle.ConstantTimeCompare([]byte(h), []byte(hash)) == 1
}

// NewReplicaID returns a fresh replica id: "r-" and 10 hex digits.
func NewReplicaID() string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("registry: crypto/rand failed: " + err.Error())
	}
	return "r-" + hex.EncodeToString(b[:])
}
