package protocol

import (
	"errors"
	"testing"
)

func TestClientHashIsFNV1a64(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want uint64
	}{{"", 0xcbf29ce484222325}, {"a", 0xaf63dc4c8601ec8c}, {"foobar", 0x85944171f73967e8}} {
		if got := ClientHash(tc.id); got != tc.want {
			t.Errorf("ClientHash(%q) = %#x, want %#x", tc.id, got, tc.want)
		}
	}
	if got := WorkerOf("foobar", 7); got != int(0x85944171f73967e8%7) {
		t.Errorf("WorkerOf(foobar, 7) = %d", got)
	}
	if got := WorkerOf("foobar", 0); got != 0 {
		t.Errorf("WorkerOf(foobar, 0) = %d, want 0", got)
	}
}

func TestWorkerValidate(t *testing.T) {
	for _, tc := range []struct {
		w     Worker
		field string
	}{
		{Worker{Index: 0, Count: 1}, ""},
		{Worker{Index: 3, Count: 4}, ""},
		{Worker{Index: 4, Count: 4}, "worker.index"},
		{Worker{Index: -1, Count: 4}, "worker.index"},
		{Worker{Index: 0, Count: 0}, "worker.count"},
		{Worker{Index: 0, Count: MaxWorkers + 1}, "worker.count"},
	} {
		err := tc.w.Validate()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v, want nil", tc.w, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%+v: %v, want a *FieldError naming %s", tc.w, err, tc.field)
		}
	}
}

func TestDecodeReportWorker(t *testing.T) {
	r, err := DecodeReport([]byte(`{"load": 1, "worker": {"index": 1, "count": 2}}`))
	if err != nil || r.Worker == nil || *r.Worker != (Worker{Index: 1, Count: 2}) {
		t.Fatalf("DecodeReport = %+v, %v; want worker {1 2}", r, err)
	}
	for body, field := range map[string]string{
		`{"load": 1, "worker": 3}`:                                "worker",
		`{"load": 1, "worker": {"index": 2, "count": 2}}`:         "worker.index",
		`{"load": 1, "worker": {"index": 0}}`:                     "worker.count",
		`{"load": 1, "worker": {"index": 0.5, "count": 2}}`:       "worker.index",
		`{"load": 1, "worker": {"index": 0, "count": 2, "x": 1}}`: "worker.x",
	} {
		_, err := DecodeReport([]byte(body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("DecodeReport(%s) = %v, want a *FieldError naming %s", body, err, field)
		}
	}
}
