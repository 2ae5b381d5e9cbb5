package certs

import (
	"errors"
	"os"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
)

// TestPairStep drives one pair's decisions through a rotation with a
// half-written pair in the middle: refused and logged once, retried, then
// swapped.
func TestPairStep(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	a := ca.Leaf(t, "a", certstest.LeafOptions{})
	aCert, aKey := readBoth(t, a)
	b := ca.Leaf(t, "b", certstest.LeafOptions{})
	bCert, bKey := readBoth(t, b)

	p := &pairState{files: PairFiles{Cert: "a.pem", Key: "a-key.pem"}}
	steps := []struct {
		name          string
		cert, key     []byte
		readErr       error
		swap, err, lg bool
		serial        int64
	}{
		{name: "first load", cert: aCert, key: aKey, swap: true, serial: a.Cert.SerialNumber.Int64()},
		{name: "unchanged", cert: aCert, key: aKey, serial: a.Cert.SerialNumber.Int64()},
		{name: "new cert, old key", cert: bCert, key: aKey, err: true, lg: true, serial: a.Cert.SerialNumber.Int64()},
		{name: "same mismatch again: not logged", cert: bCert, key: aKey, err: true, serial: a.Cert.SerialNumber.Int64()},
		{name: "unreadable: a new reason", readErr: errors.New("gone"), err: true, lg: true, serial: a.Cert.SerialNumber.Int64()},
		{name: "both new", cert: bCert, key: bKey, swap: true, serial: b.Cert.SerialNumber.Int64()},
		{name: "garbage", cert: []byte("nope"), key: bKey, err: true, lg: true, serial: b.Cert.SerialNumber.Int64()},
		{name: "back to the served contents clears the reason", cert: bCert, key: bKey, serial: b.Cert.SerialNumber.Int64()},
		{name: "garbage again is logged again", cert: []byte("nope"), key: bKey, err: true, lg: true, serial: b.Cert.SerialNumber.Int64()},
	}
	for _, s := range steps {
		d := p.step(s.cert, s.key, s.readErr)
		if (d.swap != nil) != s.swap || (d.err != nil) != s.err || d.logErr != s.lg {
			t.Fatalf("%s: swap=%v err=%v log=%v, want swap=%v err=%v log=%v", s.name, d.swap != nil, d.err, d.logErr, s.swap, s.err, s.lg)
		}
		if got := p.served.Leaf.SerialNumber.Int64(); got != s.serial {
			t.Fatalf("%s: serving serial %d, want %d", s.name, got, s.serial)
		}
	}
}

func readBoth(t *testing.T, p certstest.Pair) (cert, key []byte) {
	t.Helper()
	cert, err := os.ReadFile(p.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err = os.ReadFile(p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
