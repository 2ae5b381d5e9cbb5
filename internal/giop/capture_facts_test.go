package giop

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

func isPrime(n int32) bool {
	if n < 2 {
		return false
	}
	for d := int32(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// reverse turns "a>b" into "b>a".
func reverse(stream string) string {
	a, b, _ := strings.Cut(stream, ">")
	return b + ">" + a
}

// TestCaptureSemantics checks what the captures mean, not just their bytes:
// every is_prime argument and result decodes through the body helpers (so
// the bodies' alignment, 8 in 1.2 and whatever follows the principal in 1.0,
// is right), the answers are right, and the facts recorded with the captures
// hold.
func TestCaptureSemantics(t *testing.T) {
	t.Parallel()
	for _, file := range captureFiles(t) {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			type call struct {
				op string
				n  int32
			}
			calls := map[string]map[uint32]call{} // request stream → id → call
			firstID := map[string]uint32{}
			lastID := map[string]uint32{}
			var answered, forwards, locates int
			// Requests and LocateRequests share one id sequence per connection.
			nextID := func(stream string, id uint32) {
				if _, seen := firstID[stream]; !seen {
					firstID[stream] = id
				} else if id != lastID[stream]+2 {
					t.Errorf("%s: request id %d after %d, want steps of 2", stream, id, lastID[stream])
				}
				lastID[stream] = id
			}
			for _, cm := range captureMessages(t, file) {
				m, err := DecodeMessage(cm.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				switch m := m.(type) {
				case *Request:
					nextID(cm.Stream, m.RequestID)
					if m.Version == V12 && (m.Target.Disposition != KeyAddr || m.ResponseFlags != FlagsTwoway) {
						t.Errorf("%s: GIOP 1.2 request with %v target and flags %d, captured clients use KeyAddr and 3", cm.Stream, m.Target.Disposition, m.ResponseFlags)
					}
					if m.Version != V12 && m.Principal != nil {
						t.Errorf("%s: principal %q, captured clients send none", cm.Stream, m.Principal)
					}
					if calls[cm.Stream] == nil {
						calls[cm.Stream] = map[uint32]call{}
					}
					switch m.Operation {
					case OpIsPrime:
						n, err := m.LongArg()
						if err != nil {
							t.Fatalf("%s: %v", cm.Stream, err)
						}
						calls[cm.Stream][m.RequestID] = call{OpIsPrime, n}
					case OpIsA:
						d := m.BodyDecoder()
						if id := d.String("logical_type_id"); id != PrimeRepoID || d.Err() != nil {
							t.Errorf("%s: _is_a(%q), %v", cm.Stream, id, d.Err())
						}
						calls[cm.Stream][m.RequestID] = call{OpIsA, 0}
					default:
						t.Errorf("%s: unexpected operation %q", cm.Stream, m.Operation)
					}
				case *Reply:
					c, ok := calls[reverse(cm.Stream)][m.RequestID]
					if !ok {
						t.Fatalf("%s: reply %d to no request", cm.Stream, m.RequestID)
					}
					switch m.Status {
					case StatusNoException:
						got, err := m.BooleanResult()
						if err != nil {
							t.Fatalf("%s: %v", cm.Stream, err)
						}
						if c.op == OpIsPrime && got != isPrime(c.n) {
							t.Errorf("%s: is_prime(%d) = %v", cm.Stream, c.n, got)
						}
						if c.op == OpIsA && !got {
							t.Errorf("%s: _is_a answered false", cm.Stream)
						}
						answered++
					case StatusLocationForward:
						ref, err := m.Forward()
						if err != nil {
							t.Fatal(err)
						}
						checkForward(t, cm.Stream, ref)
						forwards++
					default:
						t.Errorf("%s: reply status %v", cm.Stream, m.Status)
					}
				case *LocateRequest:
					nextID(cm.Stream, m.RequestID)
					if _, err := m.Target.Key(); err != nil {
						t.Error(err)
					}
				case *LocateReply:
					locates++
					if m.Status == LocateObjectForward {
						if m.BodyOffset != 20 {
							t.Errorf("%s: LocateReply 1.2 body at offset %d, want 20 (not re-aligned)", cm.Stream, m.BodyOffset)
						}
						ref, err := m.Forward()
						if err != nil {
							t.Fatal(err)
						}
						checkForward(t, cm.Stream, ref)
						forwards++
					} else if m.Status != LocateObjectHere {
						t.Errorf("%s: locate status %v", cm.Stream, m.Status)
					}
				default:
					t.Errorf("%s: unexpected %v", cm.Stream, m.Type())
				}
			}
			if answered < 10 {
				t.Errorf("only %d calls answered", answered)
			}
			if strings.Contains(name, "fwd") && forwards == 0 {
				t.Errorf("no forward in a forwarding capture")
			}
			for stream, id := range firstID {
				// omniORB's request ids start at 2 (the forwarded clients' as
				// well), JacORB's at 0.
				if id != 0 && id != 2 {
					t.Errorf("%s: first request id %d", stream, id)
				}
			}
			t.Logf("%d calls answered, %d forwards, %d locate replies", answered, forwards, locates)
		})
	}
}

// checkForward checks a forward IOR of the captures: typed, one IIOP 1.2
// profile on loopback carrying the ORB type and code sets.
func checkForward(t *testing.T, stream string, ref ior.IOR) {
	t.Helper()
	if ref.TypeID != PrimeRepoID {
		t.Errorf("%s: forward IOR type %q", stream, ref.TypeID)
	}
	p, ok := ref.IIOP()
	if !ok || p.Version != ior.V12 || p.Host != "127.0.0.1" || len(p.ObjectKey) == 0 {
		t.Fatalf("%s: forward IOR profile %+v", stream, p)
	}
	var orbType, codeSets bool
	for _, c := range p.Components {
		switch c := c.(type) {
		case ior.ORBType:
			orbType = c.ID == ior.ORBTypeOmniORB || c.ID == ior.ORBTypeJacORB
		case ior.CodeSets:
			codeSets = c.Wchar.Native == ior.CodeSetUTF16
		}
	}
	if !orbType || !codeSets {
		t.Errorf("%s: forward IOR components %+v", stream, p.Components)
	}
	if bytes.Contains(p.ObjectKey, []byte("fwd")) {
		t.Errorf("%s: forwarded to the forwarder's own key %q", stream, p.ObjectKey)
	}
}
