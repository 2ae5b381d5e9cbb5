package giopbridge_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// counterIDL is the Counter interface the replicas serve.
const counterIDL = "../../backend/idl/counter.idl"

// omniClientPy is an unmodified omniORBpy client of counter.idl: it
// narrows the group's reference (its _is_a goes through the log), then
// threads increment it concurrently; it prints one JSON line.
const omniClientPy = `import json, sys, threading
from omniORB import CORBA
import _GlobalIDL
orb = CORBA.ORB_init(sys.argv[:1], CORBA.ORB_ID)
c = orb.string_to_object(sys.argv[1])._narrow(_GlobalIDL.Counter)
values, lock = [], threading.Lock()
def work():
    for _ in range(10):
        v = c.increment()
        with lock:
            values.append(v)
threads = [threading.Thread(target=work) for _ in range(4)]
for th in threads: th.start()
for th in threads: th.join()
print(json.dumps({"values": values, "value": c.value(), "checkpointable": c._is_a("IDL:omg.org/FT/Checkpointable:1.0")}))
orb.destroy()
`

// needOmniORBpy returns the python3 that imports omniORB; it skips the
// test when there is none, and fails it with CI=true.
func needOmniORBpy(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(python, "-c", "import omniORB").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("omniORBpy is not importable by python3: %v (required with CI=true; scripts/test.sh installs it)", err)
		}
		t.Skipf("omniORBpy is not importable by python3: %v; scripts/test.sh installs it", err)
	}
	return python
}

// An omniORBpy client with four threads calls the replicated Counter
// through the bridge: every call gets its own reply (1..40, none twice),
// and both replicas end equal.
func TestOmniORBClientThroughTheBridge(t *testing.T) {
	t.Parallel()
	python := needOmniORBpy(t)
	ctx := testCtx(t)
	r := newRig(t, rigOptions{replicas: 2})
	stubs := t.TempDir()
	omniidl := `import sys; from omniidl.main import main; sys.argv[0] = "omniidl"; sys.exit(main())`
	if out, err := exec.CommandContext(ctx, python, "-c", omniidl, "-bpython", "-C", stubs, counterIDL).CombinedOutput(); err != nil {
		t.Fatalf("omniidl -bpython: %v\n%s", err, out)
	}
	script := filepath.Join(stubs, "client.py")
	if err := os.WriteFile(script, []byte(omniClientPy), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, script, "corbaloc:iiop:1.2@"+r.addr+"/"+groupKey)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+stubs)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("python client: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Values         []int64
		Value          int64
		Checkpointable bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	slices.Sort(got.Values)
	for i, v := range got.Values {
		if v != int64(i+1) {
			t.Fatalf("values %v, want 1..40", got.Values)
		}
	}
	if len(got.Values) != 40 || got.Value != 40 || !got.Checkpointable {
		t.Fatalf("got %+v, want 40 values, value 40, checkpointable", got)
	}
	r.waitIncrements(ctx, 40)
	if a, b := r.replicas[0].counter.State(), r.replicas[1].counter.State(); a != b {
		t.Fatalf("replica states differ: %+v, %+v", a, b)
	}
}
