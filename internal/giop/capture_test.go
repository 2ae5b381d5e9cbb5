package giop

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/internal/capture"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// captureFiles lists the test vectors: traffic between unmodified omniORB,
// omniORBpy and JacORB processes, recorded on loopback.
func captureFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/captures/*.pcap")
	if err != nil || len(files) == 0 {
		t.Fatalf("no capture files: %v", err)
	}
	return files
}

func captureMessages(t testing.TB, file string) []capture.Message {
	t.Helper()
	msgs, err := capture.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

type padRun struct{ at, n int }

// encodeTracked encodes m and returns the bytes and where the padding is.
func encodeTracked(t testing.TB, m Message) ([]byte, []padRun) {
	t.Helper()
	var pads []padRun
	e := cdr.NewEncoder(nil, m.envelope().Order, 0)
	e.TrackPadding(func(at, n int) { pads = append(pads, padRun{at, n}) })
	if err := encodeMessage(e, m); err != nil {
		t.Fatalf("re-encoding: %v", err)
	}
	return e.Bytes(), pads
}

// sameButPadding compares an encoding with the original bytes: same length,
// same bytes outside the padding runs. It returns the non-zero padding the
// original had, as "offset: bytes" strings.
func sameButPadding(t testing.TB, what string, orig, enc []byte, pads []padRun) []string {
	t.Helper()
	return sameButPaddingAt(t, what, orig, enc, pads, 0)
}

// sameButPaddingAt is sameButPadding for bytes that start at message offset
// base, which the returned offsets include.
func sameButPaddingAt(t testing.TB, what string, orig, enc []byte, pads []padRun, base int) []string {
	t.Helper()
	if len(enc) != len(orig) {
		t.Fatalf("%s: re-encoded to %d bytes, original has %d\norig % x\nenc  % x", what, len(enc), len(orig), orig, enc)
	}
	isPad := make([]bool, len(enc))
	var garbage []string
	for _, p := range pads {
		for i := p.at; i < p.at+p.n; i++ {
			isPad[i] = true
		}
		if run := orig[p.at : p.at+p.n]; !bytes.Equal(run, make([]byte, p.n)) {
			garbage = append(garbage, fmt.Sprintf("%d: % x", base+p.at, run))
		}
	}
	for i := range enc {
		if enc[i] != orig[i] && !isPad[i] {
			t.Fatalf("%s: byte %d is %#02x, original %#02x (not padding)\norig % x\nenc  % x", what, i, enc[i], orig[i], orig, enc)
		}
	}
	return garbage
}

// checkForwardIOR re-encodes the IOR in a forward body at its offset and
// compares it with the body, padding aside.
func checkForwardIOR(t testing.TB, what string, body []byte, order cdr.ByteOrder, offset int, ref ior.IOR) []string {
	t.Helper()
	var pads []padRun
	e := cdr.NewEncoder(nil, order, offset)
	e.TrackPadding(func(at, n int) { pads = append(pads, padRun{at, n}) })
	ref.Encode(e)
	return sameButPaddingAt(t, what+" IOR", body, e.Bytes(), pads, offset)
}

func TestCaptureVectors(t *testing.T) {
	t.Parallel()
	for _, file := range captureFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			msgs := captureMessages(t, file)
			counts := map[string]int{}
			garbage := map[string]int{}
			for _, cm := range msgs {
				what := fmt.Sprintf("%s #%d", cm.Stream, cm.Index)
				m, err := DecodeMessage(cm.Bytes)
				if err != nil {
					t.Fatalf("%s: %v\n% x", what, err, cm.Bytes)
				}
				env := EnvelopeOf(m)
				what += fmt.Sprintf(" (GIOP %v %v %v)", env.Version, env.Order, m.Type())
				counts[fmt.Sprintf("%v %v %v", env.Version, env.Order, m.Type())]++

				enc, pads := encodeTracked(t, m)
				kind := fmt.Sprintf("GIOP %v %v %v", env.Version, env.Order, m.Type())
				for _, g := range sameButPadding(t, what, cm.Bytes, enc, pads) {
					garbage[kind+" @"+g]++
				}
				again, err := DecodeMessage(enc)
				if err != nil {
					t.Fatalf("%s: decoding the re-encoding: %v", what, err)
				}
				if !reflect.DeepEqual(again, m) {
					t.Fatalf("%s: decode(encode(m)) differs\n got %+v\nwant %+v", what, again, m)
				}

				switch m := m.(type) {
				case *Reply:
					if m.Status == StatusLocationForward || m.Status == StatusLocationForwardPerm {
						ref, err := m.Forward()
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						for _, g := range checkForwardIOR(t, what, m.Body, m.Order, m.BodyOffset, ref) {
							garbage[kind+" forward IOR @"+g]++
						}
						t.Logf("%s: forward to %s", what, describe(ref))
					}
				case *LocateReply:
					if m.Status == LocateObjectForward || m.Status == LocateObjectForwardPerm {
						ref, err := m.Forward()
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						for _, g := range checkForwardIOR(t, what, m.Body, m.Order, m.BodyOffset, ref) {
							garbage[kind+" forward IOR @"+g]++
						}
						t.Logf("%s: forward to %s (IOR at offset %d)", what, describe(ref), m.BodyOffset)
					}
				}
			}
			t.Logf("%d messages: %v", len(msgs), counts)
			for g, n := range garbage {
				t.Logf("non-zero padding ×%d: %s", n, g)
			}
		})
	}
}

func describe(ref ior.IOR) string {
	s := fmt.Sprintf("%q", ref.TypeID)
	for _, p := range ref.Profiles {
		if ip, ok := p.(ior.IIOPProfile); ok {
			s += fmt.Sprintf(" IIOP %v %v %s key %q", ip.Version, ip.Order, ip.Address().HostPort(), ip.ObjectKey)
			for _, c := range ip.Components {
				s += fmt.Sprintf(" %+v", c)
			}
		} else {
			s += fmt.Sprintf(" %+v", p)
		}
	}
	return s
}
