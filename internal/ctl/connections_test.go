package ctl

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestPrintConnections(t *testing.T) {
	t.Parallel()
	opened := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	list := protocol.ConnectionList{
		Connections: []protocol.Connection{
			{ID: 7, Client: "10.0.0.7:51234", Replica: "r-1", Address: "10.0.1.5:7000", BytesIn: 64, BytesOut: 1 << 20, Opened: opened, AgeMS: 61_400, IdleMS: 250},
			{ID: 9, Client: "[2001:db8::1]:40000", Replica: "r-2", Address: "10.0.1.6:7000", Opened: opened, AgeMS: 900, IdleMS: 900},
		},
		Next:  9,
		Total: 5,
	}
	var out bytes.Buffer
	if err := PrintConnections(&out, "echo", list); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^ID\s+CLIENT\s+REPLICA\s+ADDRESS\s+BYTES IN\s+BYTES OUT\s+AGE\s+IDLE$`,
		`(?m)^7\s+10\.0\.0\.7:51234\s+r-1\s+10\.0\.1\.5:7000\s+64\s+1048576\s+1m1s\s+250ms$`,
		`(?m)^9\s+\[2001:db8::1\]:40000\s+r-2\s+10\.0\.1\.6:7000\s+0\s+0\s+900ms\s+900ms$`,
		`(?m)^2 of 5 connection\(s\) open in group echo; next page: --after 9 \(or --all\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("output lacks %s:\n%s", re, out.String())
		}
	}

	out.Reset()
	list.Next = 0
	if err := PrintConnections(&out, "echo", list); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "next page") {
		t.Errorf("the last page offers a next one:\n%s", out.String())
	}
	out.Reset()
	if err := PrintConnections(&out, "echo", protocol.ConnectionList{}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "no connections open in group echo\n" || strings.Contains(out.String(), "ID") {
		t.Errorf("empty table: %q", out.String())
	}
}
