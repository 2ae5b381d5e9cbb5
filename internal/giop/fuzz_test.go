package giop

import (
	"errors"
	"reflect"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// FuzzDecodeMessage feeds arbitrary bytes to the decoder. It must never
// panic; it must fail with one of the package's sentinels; and whatever it
// accepts must re-encode, and decode again to an equal value. The body
// accessors must not panic either.
func FuzzDecodeMessage(f *testing.F) {
	for _, file := range captureFiles(f) {
		for _, m := range captureMessages(f, file) {
			f.Add(m.Bytes)
		}
	}
	for _, g := range goldens {
		f.Add(g.bytes)
	}
	for _, v := range versions {
		for _, o := range orders {
			for _, m := range samples(v, o) {
				b, err := EncodeMessage(m)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Limits{MaxMessageSize: 1 << 20}.DecodeMessage(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrBadMagic) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		enc, err := EncodeMessage(m)
		if err != nil {
			t.Fatalf("decoded %#v but cannot encode it: %v", m, err)
		}
		again, err := DecodeMessage(enc)
		if err != nil {
			t.Fatalf("cannot decode the re-encoding: %v\n% x", err, enc)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("decode(encode(m)) != m\n got %#v\nwant %#v", again, m)
		}
		exerciseAccessors(t, m)
	})
}

// exerciseAccessors calls every typed body accessor m has; forwarded IORs
// must survive their own round trip.
func exerciseAccessors(t *testing.T, m Message) {
	checkIOR := func(ref ior.IOR, err error) {
		if err != nil {
			return
		}
		back, err := ior.ParseStringified(ref.String())
		if err != nil || !reflect.DeepEqual(back, ref) {
			t.Fatalf("forward IOR does not round-trip: %v\n got %#v\nwant %#v", err, back, ref)
		}
	}
	switch m := m.(type) {
	case *Request:
		_, _ = m.Target.Key()
		_, _ = m.LongArg()
	case *LocateRequest:
		_, _ = m.Target.Key()
	case *Reply:
		checkIOR(m.Forward())
		_, _ = m.SystemException()
		_, _ = m.AddressingMode()
		_, _ = m.BooleanResult()
		_, _ = m.LongResult()
	case *LocateReply:
		checkIOR(m.Forward())
		_, _ = m.SystemException()
		_, _ = m.AddressingMode()
	}
}
