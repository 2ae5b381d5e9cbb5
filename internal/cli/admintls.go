package cli

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
)

// adminTLSFlags are --cacert, --cert and --key: the TLS client side of the
// calls ctl, backend and agent make to the admin API (an https:// admin
// URL, mTLS when the admin listener asks for a client certificate).
type adminTLSFlags struct {
	cacert, cert, key string
}

func (f *adminTLSFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.cacert, "cacert", "", "PEM CA certificates that verify the admin API's certificate (default the system roots)")
	fl.StringVar(&f.cert, "cert", "", "PEM client certificate presented to the admin API (mTLS; needs --key)")
	fl.StringVar(&f.key, "key", "", "PEM private key of --cert")
}

// set reports whether any of the flags is given.
func (f *adminTLSFlags) set() bool { return f.cacert != "" || f.cert != "" || f.key != "" }

// transport is an http.Transport that verifies with --cacert and presents
// --cert and --key; nil, with no error, when none is given. Errors name the
// flag, the file and why.
func (f *adminTLSFlags) transport() (*http.Transport, error) {
	if !f.set() {
		return nil, nil
	}
	c, err := certs.NewClient(certs.ClientFiles{CA: f.cacert, Cert: f.cert, Key: f.key})
	if err != nil {
		var fe *certs.FileError
		switch {
		case errors.Is(err, certs.ErrCertWithoutKey):
			return nil, errors.New("--cert and --key must be given together")
		case errors.As(err, &fe):
			flag := map[string]string{"ca": "--cacert", "cert": "--cert", "key": "--key"}[fe.Field]
			return nil, fmt.Errorf("%s: invalid value %q, must be a readable PEM file (%v)", flag, fe.Path, fe.Err)
		}
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = c.Config()
	return tr, nil
}

// client is an *http.Client with timeout and the flags' TLS settings, or
// nil (the caller's default) when no flag is given.
func (f *adminTLSFlags) client(timeout time.Duration) (*http.Client, error) {
	tr, err := f.transport()
	if err != nil || tr == nil {
		return nil, err
	}
	return &http.Client{Timeout: timeout, Transport: tr}, nil
}
