package config

import (
	"errors"
	"testing"
)

func TestParseTLS(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	good := edit("front_door: 127.0.0.1:8000", "front_door: 127.0.0.1:8000\n    tls:\n      cert: /etc/fulcrum/web.pem\n      key: /etc/fulcrum/web-key.pem\n      certs: [{cert: b.pem, key: b-key.pem}]\n      client_ca: ca.pem\n      min_version: 1.3") +
		"admin_tls: {cert: admin.pem, key: admin-key.pem, client_ca: ca.pem}\n"
	f, err := Parse("fulcrum.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Groups[0]
	if g.Advertise != "https://127.0.0.1:8000" {
		t.Errorf("advertise %q, want the https:// default", g.Advertise)
	}
	if g.TLS.Cert != "/etc/fulcrum/web.pem" || g.TLS.MinVersion != "1.3" || len(g.TLS.Certs) != 1 || g.TLS.Certs[0].Key != "b-key.pem" || g.TLS.ClientCA != "ca.pem" {
		t.Errorf("tls %+v", g.TLS)
	}
	if f.AdminTLS != (AdminTLS{Cert: "admin.pem", Key: "admin-key.pem", ClientCA: "ca.pem"}) {
		t.Errorf("admin_tls %+v", f.AdminTLS)
	}
	plain, err := Parse("fulcrum.yaml", []byte(base))
	if err != nil || plain.Groups[0].Advertise != "http://127.0.0.1:8000" || plain.Groups[0].TLS.Enabled() || plain.AdminTLS.Enabled() {
		t.Errorf("without tls: %+v, %v", plain, err)
	}
}

func TestParseTLSBad(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	fd := "front_door: 127.0.0.1:8000"
	tests := []struct {
		name, in, want string
	}{
		{"key missing", edit(fd, fd+"\n    tls: {cert: a.pem}"),
			`fulcrum.yaml:6: groups[0].tls.key: invalid value "", must be the path of a PEM file (required when tls is set)`},
		{"cert missing", edit(fd, fd+"\n    tls: {key: a.pem}"),
			`fulcrum.yaml:6: groups[0].tls.cert: invalid value "", must be the path of a PEM file (required when tls is set)`},
		{"min version", edit(fd, fd+"\n    tls: {cert: a.pem, key: k.pem, min_version: 1.1}"),
			`fulcrum.yaml:6: groups[0].tls.min_version: invalid value 1.1, must be one of: 1.2, 1.3`},
		{"extra pair without key", edit(fd, fd+"\n    tls:\n      cert: a.pem\n      key: k.pem\n      certs:\n        - cert: b.pem"),
			`fulcrum.yaml:10: groups[0].tls.certs[0].key: invalid value "", must be the path of a PEM file (required when tls is set)`},
		{"giop group", "groups:\n  - name: g\n    protocol: giop\n    front_door: 127.0.0.1:8000\n    tls: {cert: a.pem, key: k.pem}\n",
			`fulcrum.yaml:5: groups[0].tls: invalid value (a mapping), is only allowed with protocol http (this group is giop)`},
		{"http advertise", edit(fd, fd+"\n    advertise: http://web.example\n    tls: {cert: a.pem, key: k.pem}"),
			`fulcrum.yaml:6: groups[0].advertise: invalid value "http://web.example", must be an https:// URL when tls is set`},
		{"unknown tls key", edit(fd, fd+"\n    tls: {cert: a.pem, key: k.pem, ca: x}"),
			`fulcrum.yaml:6: groups[0].tls.ca: unknown key, allowed keys: cert, key, certs, client_ca, min_version`},
		{"admin tls without key", "admin_tls: {cert: a.pem}\n",
			`fulcrum.yaml:1: admin_tls.key: invalid value "", must be the path of a PEM file (required when admin_tls is set)`},
		{"unknown admin tls key", "admin_tls: {cert: a.pem, key: k.pem, min_version: 1.3}\n",
			`fulcrum.yaml:1: admin_tls.min_version: unknown key, allowed keys: cert, key, client_ca`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("fulcrum.yaml", []byte(tc.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse: %v; want a *config.Error\n%s", err, tc.in)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}
