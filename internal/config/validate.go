package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Log levels.
var logLevels = []string{"debug", "info", "warn", "error"}

// MaxEtcdReplicatedPayload bounds a replicated group's max_payload with
// store.etcd: etcd's default --max-request-bytes (1.5 MiB) less 4 KiB for
// the entry's header and the transaction around it.
const MaxEtcdReplicatedPayload = protocol.ByteSize(1536<<10 - 4<<10)

// maxTokenLen bounds admin and join tokens.
const maxTokenLen = 512

// Validate checks f after defaults (groups completed with WithDefaults).
// The error joins (errors.Join) one *protocol.FieldError per problem,
// each naming the key by its dotted path in the file, such as
// "groups[1].front_door".
func (f File) Validate() error { return errors.Join(f.validate()...) }

// problems collects the problems of a file. A check of a new key adds
// one with fail and goes on: every problem is reported at once.
type problems []error

// fail records that field has value v, and what it allows.
func (p *problems) fail(field string, v any, allowed string) {
	*p = append(*p, &protocol.FieldError{Field: field, Value: v, Allowed: allowed})
}

// validate returns every problem of f, each a *protocol.FieldError.
func (f File) validate() []error {
	var p problems
	if err := checkListenAddr(f.Admin); err != "" {
		p.fail("admin", f.Admin, err)
	}
	if err := checkToken(f.AdminToken); err != "" {
		p.fail("admin_token", "(hidden)", err)
	}
	if err := f.AdminTLS.validate(); err != nil {
		p = append(p, err)
	}
	if err := checkToken(f.JoinToken); err != "" {
		p.fail("join_token", "(hidden)", err)
	}
	if strings.TrimSpace(f.DataDir) == "" {
		p.fail("data_dir", f.DataDir, "must be a directory path")
	}
	f.validateCluster(&p)
	if strings.ContainsFunc(f.AccessLog, unicode.IsControl) {
		p.fail("access_log", f.AccessLog, `must be "" (off), "-" (stderr) or a file path`)
	}
	if !slices.Contains(logLevels, f.LogLevel) {
		p.fail("log_level", f.LogLevel, "must be one of: "+strings.Join(logLevels, ", "))
	}
	if !slices.Contains(logFormats, f.LogFormat) {
		p.fail("log_format", f.LogFormat, "must be one of: "+strings.Join(logFormats, ", "))
	}
	if d := f.ShutdownTimeout.D(); d < 0 || d > time.Hour {
		p.fail("shutdown_timeout", f.ShutdownTimeout.String(), "must be a duration in [0s, 1h]")
	}
	if !slices.Contains(httpEngines, f.HTTPEngine) {
		p.fail("http_engine", f.HTTPEngine, "must be one of: "+strings.Join(httpEngines, ", "))
	}

	names := map[string]int{}
	var doors []listener
	if _, port, err := net.SplitHostPort(f.Admin); err == nil && port != "0" {
		doors = append(doors, listener{owner: "admin", addr: f.Admin})
	}
	for i, g := range f.Groups {
		path := fmt.Sprintf("groups[%d]", i)
		for _, err := range registry.ValidateAll(g) {
			if e, ok := err.(*protocol.FieldError); ok {
				e.Field = path + "." + e.Field
				p = append(p, e)
			} else {
				p.fail(path, g.Name, err.Error())
			}
		}
		if f.Store.Etcd.Enabled() && registry.IsReplicated(g) && g.Replicated.MaxPayload > MaxEtcdReplicatedPayload {
			p.fail(path+".replicated.max_payload", g.Replicated.MaxPayload, fmt.Sprintf("must be at most %s with store.etcd: an entry is one etcd request, below etcd's default --max-request-bytes (1.5MiB) with room for the entry's header", MaxEtcdReplicatedPayload))
		}
		if j, dup := names[g.Name]; dup {
			p.fail(path+".name", g.Name, fmt.Sprintf("must be unique among groups (groups[%d] has it too)", j))
		} else {
			names[g.Name] = i
		}
		for _, d := range doors {
			if sameListener(d.addr, g.FrontDoor) {
				p.fail(path+".front_door", g.FrontDoor, fmt.Sprintf("must not be an address another listener uses (%s listens on %s)", d.owner, d.addr))
				break
			}
		}
		doors = append(doors, listener{owner: path, addr: g.FrontDoor})
	}
	return append(p, checkLoops(f)...)
}

// listener is an address some part of the balancer listens on.
type listener struct {
	owner string
	addr  string
}

// sameListener reports whether listening on a and b would collide: the
// same port on the same host, or on a wildcard host. Port 0 (any free
// port) never collides.
func sameListener(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb {
		return false
	}
	if n, err := strconv.Atoi(pa); err != nil || n == 0 {
		return false
	}
	return strings.EqualFold(ha, hb) || isWildcard(ha) || isWildcard(hb)
}

func isWildcard(host string) bool {
	return host == "" || host == "0.0.0.0" || host == "::"
}

// checkListenAddr checks a host:port to listen on; it returns what is
// allowed, or "" when addr is fine.
func checkListenAddr(addr string) string {
	const allowed = "must be host:port with a port in 0-65535, such as 127.0.0.1:7070"
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return allowed
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return allowed
	}
	return ""
}

// checkToken checks an admin or join token; "" means none and is fine.
func checkToken(tok string) string {
	if len(tok) > maxTokenLen {
		return fmt.Sprintf("must be at most %d characters", maxTokenLen)
	}
	if strings.ContainsFunc(tok, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsGraphic(r) || unicode.IsSpace(r) }) {
		return "must be printable ASCII without spaces"
	}
	return ""
}
