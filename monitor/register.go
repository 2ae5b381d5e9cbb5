package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Registration retry backoff: doubling from the first to the last, each
// wait drawn from [d/2, d].
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 10 * time.Second
)

// maxAnswerBytes bounds what the monitor reads of an admin API answer.
const maxAnswerBytes = 1 << 20

// APIError is an error answer of the balancer's admin API.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code, Message and Field are the body's error object, when it has one.
	Code    string
	Message string
	Field   string
	// registering marks the answer to a registration.
	registering bool
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("balancer answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Field != "" {
		msg += " (field " + e.Field + ")"
	}
	return msg
}

// Unwrap makes a 401 match ErrUnauthorized.
func (e *APIError) Unwrap() error {
	if e.Status == http.StatusUnauthorized {
		return ErrUnauthorized
	}
	return nil
}

// responseError reads an error answer into an *APIError.
func responseError(resp *http.Response) *APIError {
	e := &APIError{Status: resp.StatusCode}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if json.Unmarshal(data, &body) == nil {
		e.Code, e.Message, e.Field = body.Error.Code, body.Error.Message, body.Error.Field
	}
	return e
}

// canRegister reports whether the monitor knows enough to register.
func (m *Monitor) canRegister() bool {
	return len(m.opts.Admins) > 0 && m.opts.Group != "" && m.opts.Address != ""
}

// register registers the replica once, with replace, and adopts the answer.
func (m *Monitor) register(ctx context.Context) (protocol.Registered, error) {
	body := protocol.Registration{
		Address: m.opts.Address,
		Weight:  m.opts.Weight,
		Monitor: protocol.MonitorSpec{Mode: m.opts.Mode},
		Replace: true, // a sibling worker joins whatever it says (Options.Worker)
		Worker:  m.opts.Worker,
	}
	if m.opts.Mode == protocol.MonitorPull {
		body.Monitor.URL = m.opts.PullURL
		body.Monitor.Interval = protocol.Duration(m.pullInterval)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return protocol.Registered{}, fmt.Errorf("monitor: register: %w", err)
	}
	var reg protocol.Registered
	err = m.eachAdmin(ctx, func(base string) error {
		var err error
		reg, err = m.registerAt(ctx, base, data)
		return err
	})
	if err != nil {
		return protocol.Registered{}, err
	}
	m.adopt(reg)
	m.log.Info("registered", "replica", reg.ID, "address", m.opts.Address, "front_door", reg.FrontDoor,
		"report_interval", reg.ReportInterval.D())
	return reg, nil
}

// eachAdmin calls try with each admin URL in turn, from the one reported
// to now, until one answers (see tryElsewhere); the one that does becomes
// the one reported to. It returns try's error (all of them, when every URL
// failed).
func (m *Monitor) eachAdmin(ctx context.Context, try func(base string) error) error {
	m.routeMu.Lock()
	order, was := m.route.order(), m.route.current
	m.routeMu.Unlock()
	var errs []error
	for _, base := range order {
		err := try(base)
		if err == nil || ctx.Err() != nil || !tryElsewhere(err) {
			if err == nil && base != was {
				m.routeMu.Lock()
				m.route.current = base
				m.routeMu.Unlock()
			}
			return err
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// registerAt posts an encoded registration to one admin URL.
func (m *Monitor) registerAt(ctx context.Context, base string, data []byte) (protocol.Registered, error) {
	u := base + "/v1/groups/" + url.PathEscape(m.opts.Group) + "/replicas"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return protocol.Registered{}, fmt.Errorf("monitor: register: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if m.opts.JoinToken != "" {
		req.Header.Set("Authorization", "Bearer "+m.opts.JoinToken)
	}
	resp, err := m.opts.HTTPClient.Do(req)
	if err != nil {
		return protocol.Registered{}, fmt.Errorf("monitor: register: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		ae := responseError(resp)
		ae.registering = true
		return protocol.Registered{}, fmt.Errorf("monitor: register in group %q: %w", m.opts.Group, ae)
	}
	var reg protocol.Registered
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&reg); err != nil {
		return protocol.Registered{}, &decodeError{fmt.Errorf("monitor: register: decode answer: %w", err)}
	}
	if reg.ID == "" || reg.Token == "" {
		return protocol.Registered{}, &decodeError{errors.New("monitor: register: answer has no id or token")}
	}
	return reg, nil
}

// registerLoop registers, retrying with backoff until it succeeds (true),
// ctx ends or the balancer has refused too often (false).
func (m *Monitor) registerLoop(ctx context.Context) bool {
	backoff := firstBackoff
	for {
		_, err := m.register(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if m.refused(err) {
			return false
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		m.log.Warn("registration failed; retrying", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return false
		case <-m.clock.After(wait):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// refusal returns err's first *APIError when it is the balancer refusing
// a registration as such (401: no or a wrong join token; 403: the address
// is blocked), which trying again will not change by itself.
func refusal(err error) (*APIError, bool) {
	var ae *APIError
	if errors.As(err, &ae) && ae.registering && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
		return ae, true
	}
	return nil, false
}

// refused counts err against Options.RegisterAttempts when it is a
// refusal (see refusal) and reports whether the monitor has given up. The
// first refusal in a row is logged as an error at once, saying what is
// missing; the last one closes Failed. Any other outcome resets the
// count. Called from run's goroutine only.
func (m *Monitor) refused(err error) bool {
	ae, ok := refusal(err)
	if !ok {
		m.refusals = 0
		return false
	}
	m.refusals++
	if m.refusals == 1 {
		switch {
		case ae.Status == http.StatusForbidden:
			m.log.Error("the balancer refuses this replica's registration", "address", m.opts.Address, "err", err)
		case m.opts.JoinToken == "":
			m.log.Error("registration refused: no join token given, and group "+m.opts.Group+" needs one (or the admin token)",
				"hint", "set the join token (fulcrum: --join-token or FULCRUM_JOIN_TOKEN; monitor.Options.JoinToken)", "err", err)
		default:
			m.log.Error("registration refused: the join token given is not group "+m.opts.Group+"'s join token (nor the admin token)", "err", err)
		}
	}
	if m.opts.RegisterAttempts < 0 || m.refusals < m.opts.RegisterAttempts {
		return false
	}
	m.failErr = fmt.Errorf("%w after %d refused attempts: %w", ErrGaveUp, m.refusals, err)
	m.log.Error("giving up registering", "attempts", m.refusals, "err", err)
	close(m.failed)
	return true
}

// deregister removes the replica from its group, with its own token.
func (m *Monitor) deregister(ctx context.Context, reg *registration) error {
	return m.eachAdmin(ctx, func(base string) error { return m.deregisterAt(ctx, base, reg) })
}

// deregisterAt removes the replica through one admin URL.
func (m *Monitor) deregisterAt(ctx context.Context, base string, reg *registration) error {
	u := base + "/v1/groups/" + url.PathEscape(m.opts.Group) + "/replicas/" + url.PathEscape(reg.ID)
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return fmt.Errorf("monitor: deregister: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+reg.Token)
	resp, err := m.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("monitor: deregister %s: %w", reg.ID, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil // already gone
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("monitor: deregister %s: %w", reg.ID, responseError(resp))
	}
	m.log.Info("deregistered", "replica", reg.ID)
	return nil
}
