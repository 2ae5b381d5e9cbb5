//go:build linux

package omniorb

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench/omniorb"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// counterIDL is the Counter interface of "fulcrum backend counter --giop".
const counterIDL = "../../internal/backend/idl/counter.idl"

// counterClientPy is an unmodified omniORBpy client of counter.idl: three
// increments, value, get_state, then set_state with garbage, which must
// raise FT::InvalidState. It prints one JSON line.
const counterClientPy = `import json, sys
from omniORB import CORBA
import FT, _GlobalIDL
orb = CORBA.ORB_init(sys.argv[:1], CORBA.ORB_ID)
c = orb.string_to_object(sys.argv[1])._narrow(_GlobalIDL.Counter)
out = {"increments": [c.increment() for _ in range(3)], "value": c.value()}
out["state"] = c.get_state().decode()
out["is_checkpointable"] = c._is_a("IDL:omg.org/FT/Checkpointable:1.0")
try:
    c.set_state(b"garbage")
    out["garbage"] = "accepted"
except FT.InvalidState:
    out["garbage"] = "InvalidState"
print(json.dumps(out))
orb.destroy()
`

var listeningIOR = regexp.MustCompile(`(?m)^listening on (IOR:[0-9a-fA-F]+)$`)

// An omniORBpy client, with stubs omniidl made from counter.idl, calls the
// Go Counter of "fulcrum backend counter --giop": increment, value,
// get_state (the JSON state), _is_a FT::Checkpointable, and set_state with
// garbage raising FT::InvalidState.
func TestPythonClientCounter(t *testing.T) {
	o := needPython(t)
	ctx := testContext(t, time.Minute)
	stubs := t.TempDir()
	omniidlPy := `import sys; from omniidl.main import main; sys.argv[0] = "omniidl"; sys.exit(main())`
	if out, err := exec.CommandContext(ctx, o.python, "-c", omniidlPy, "-bpython", "-C", stubs, counterIDL).CombinedOutput(); err != nil {
		t.Fatalf("omniidl -bpython %s: %v\n%s", counterIDL, err, out)
	}
	script := filepath.Join(stubs, "counter_client.py")
	if err := os.WriteFile(script, []byte(counterClientPy), 0o644); err != nil {
		t.Fatal(err)
	}
	counter := proctest.Start(t, "counter", proctest.Options{}, needFulcrum(t), "backend", "counter", "--giop", "--listen", "127.0.0.1:0")
	ref := counter.WaitOutput(ctx, t, counter.Stdout, listeningIOR)[1]

	cmd := exec.CommandContext(ctx, o.python, script, ref)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+stubs)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	var got struct {
		Increments       []int64
		Value            int64
		State            string
		IsCheckpointable bool `json:"is_checkpointable"`
		Garbage          string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	if len(got.Increments) != 3 || got.Increments[0] != 1 || got.Increments[2] != 3 || got.Value != 3 {
		t.Errorf("increments %v, value %d; want 1 2 3 and 3", got.Increments, got.Value)
	}
	st, err := backend.ParseCounterState([]byte(got.State))
	if err != nil || st.Value != 3 || st.Increments != 3 {
		t.Errorf("get_state %q (%v), want value and increments 3", got.State, err)
	}
	if !got.IsCheckpointable || got.Garbage != "InvalidState" {
		t.Errorf("_is_a(Checkpointable) %v, set_state(garbage) %q; want true and InvalidState", got.IsCheckpointable, got.Garbage)
	}
}

// counter.idl compiles with Debian's omniORB C++ toolchain (omniidl -bcxx,
// then g++ on the skeleton), so that a C++ servant or client can be built
// from it.
func TestCounterIDLCompilesForCxx(t *testing.T) {
	gxx, err := omniorb.Check()
	if err != nil {
		needCI(t, "%v", err)
	}
	ctx := testContext(t, 2*time.Minute)
	dir := t.TempDir()
	idl, err := filepath.Abs(counterIDL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{omniorb.Omniidl, "-bcxx", idl},
		{gxx, "-c", "-o", "counterSK.o", "counterSK.cc"},
	} {
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "counterSK.o")); err != nil {
		t.Fatal(err)
	}
}
