package python

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DefaultPython is the interpreter the experiment runs by default: the
// SDK's virtual environment that scripts/test.sh makes, relative to the
// repository's root.
const DefaultPython = "build/venv/bin/python"

// venvCommand is how to make DefaultPython, from the repository's root.
const venvCommand = "python3 -m venv build/venv && build/venv/bin/python -m pip install -e './python[test]'"

// Interpreter is the Python the replicas and the driver run, as
// results.json records it.
type Interpreter struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	// Packages are the versions of fulcrum-client, httpx, starlette and
	// uvicorn.
	Packages map[string]string `json:"packages"`
	// CPUs are the CPUs the processes may run on (the bench's affinity).
	CPUs []int `json:"cpus"`
}

// probeScript prints the interpreter's version, the packages' versions
// and its CPU affinity as one JSON object; it fails when a package is
// missing.
const probeScript = `
import json, os, sys
from importlib.metadata import version
import fulcrum_client, httpx, starlette, uvicorn
print(json.dumps({"version": sys.version.split()[0],
    "packages": {p: version(p) for p in ("fulcrum-client", "httpx", "starlette", "uvicorn")},
    "cpus": sorted(os.sched_getaffinity(0))}))
`

// findInterpreter checks that path is a Python with what the experiment
// needs and describes it. The error names the path and how to make the
// default one.
func findInterpreter(ctx context.Context, path string) (Interpreter, error) {
	given := path != ""
	if !given {
		path = DefaultPython
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Interpreter{}, fmt.Errorf("bench python: --python %q: %w", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		if !given {
			return Interpreter{}, fmt.Errorf("bench python: no Python at %s (the SDK's virtual environment, relative to the working directory); make it from the repository's root with\n  %s\nor name an interpreter with fulcrum_client, starlette and uvicorn installed with --python", abs, venvCommand)
		}
		return Interpreter{}, fmt.Errorf("bench python: --python %q: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, abs, "-c", probeScript)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:] // the exception, e.g. ModuleNotFoundError: No module named 'starlette'
		}
		return Interpreter{}, fmt.Errorf("bench python: %s cannot run the bench (%v: %s); install the SDK with its test extras into it: %s -m pip install -e './python[test]'", abs, err, msg, abs)
	}
	in := Interpreter{Path: abs}
	if err := json.Unmarshal(out, &in); err != nil {
		return Interpreter{}, fmt.Errorf("bench python: %s: reading its versions: %w", abs, err)
	}
	if len(in.CPUs) == 0 {
		return Interpreter{}, errors.New("bench python: the interpreter reports no CPU it may run on")
	}
	in.Path = abs
	return in, nil
}
