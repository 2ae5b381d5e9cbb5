// Package omniorb holds the omniORB Prime programs — the IDL, an
// unmodified omniORB C++ server and client, and an omniORBpy client — and
// builds the C++ ones with Debian's omniORB toolchain (omniidl -bcxx, g++
// -lomniORB4 -lomnithread). The sources are embedded in the fulcrum binary,
// so that "fulcrum bench ... --orb omniorb" can build them anywhere the
// toolchain is installed; e2e/omniorb builds from the same sources.
//
//   - prime.idl: interface Prime { boolean is_prime(in long n); long
//     prime_count(in long x); }.
//   - prime_server.cc: prints its IOR, serves one Prime object under the
//     key "Prime" (also reachable as corbaloc:iiop:127.0.0.1:PORT/Prime).
//   - prime_client.cc: resolves a reference with string_to_object and
//     _narrow and calls it closed-loop or at a rate; JSON lines on stdout
//     (see the file's head comment).
//   - prime_client.py: the omniORBpy counterpart of the C++ client.
package omniorb

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// sources are the IDL and the programs, in src/ (a directory of its own:
// Go allows no C++ files beside a package's Go files without cgo).
//
//go:embed src
var sources embed.FS

// Sources are the IDL and the programs.
var Sources = mustSub(sources, "src")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embedded directory is there by construction
	}
	return sub
}

// Omniidl is Debian's omniidl, with the C++ back end of the omniORB the
// programs link against. (omniORBpy's wheel puts an omniidl of its own on
// PATH, without it.)
const Omniidl = "/usr/bin/omniidl"

// header is a header of Debian's libomniorb4-dev.
const header = "/usr/include/omniORB4/CORBA.h"

// MissingError says which part of the toolchain is not installed and
// which Debian package provides it.
type MissingError struct {
	// What is missing, e.g. "omniidl".
	What string
	// Packages are the Debian packages that provide it.
	Packages string
	Err      error
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("omniorb: %s is not installed (%v); install the Debian packages %s, e.g. apt-get install omniidl libomniorb4-dev omniorb g++",
		e.What, e.Err, e.Packages)
}

func (e *MissingError) Unwrap() error { return e.Err }

// Check reports what part of the C++ toolchain is missing (a
// *MissingError), or nil. It returns the path of g++.
func Check() (gxx string, err error) {
	if _, err := os.Stat(Omniidl); err != nil {
		return "", &MissingError{What: "omniidl", Packages: "omniidl", Err: err}
	}
	if _, err := os.Stat(header); err != nil {
		return "", &MissingError{What: "the omniORB headers", Packages: "libomniorb4-dev", Err: err}
	}
	gxx, err = exec.LookPath("g++")
	if err != nil {
		return "", &MissingError{What: "g++", Packages: "g++", Err: err}
	}
	return gxx, nil
}

// Programs are the built C++ programs.
type Programs struct {
	// Dir holds the sources, the stubs and the programs.
	Dir string
	// Server and Client are the prime_server and prime_client
	// executables.
	Server, Client string
}

// IDL is the path of prime.idl in dir (as WriteSources writes it).
func IDL(dir string) string { return filepath.Join(dir, "prime.idl") }

// PyClient is the path of prime_client.py in dir (as WriteSources writes
// it).
func PyClient(dir string) string { return filepath.Join(dir, "prime_client.py") }

// WriteSources writes the embedded sources into dir.
func WriteSources(dir string) error {
	entries, err := fs.ReadDir(Sources, ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(Sources, e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return fmt.Errorf("omniorb: %w", err)
		}
	}
	return nil
}

// Build writes the sources into dir (created if missing) and builds the
// server and the client there: omniidl -bcxx for the stubs, compiled
// once, then both programs side by side. A missing toolchain is a
// *MissingError; a failed step's error holds its output.
func Build(ctx context.Context, dir string) (*Programs, error) {
	gxx, err := Check()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("omniorb: %w", err)
	}
	if err := WriteSources(dir); err != nil {
		return nil, err
	}
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("omniorb: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run(Omniidl, "-bcxx", "prime.idl"); err != nil {
		return nil, err
	}
	cxx := []string{"-O2", "-std=c++17", "-Wall", "-I", dir}
	if err := run(gxx, append(cxx, "-c", "-o", "primeSK.o", "primeSK.cc")...); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	progs := []string{"prime_server", "prime_client"}
	errs := make([]error, len(progs))
	for i, prog := range progs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run(gxx, append(cxx, "-o", prog, prog+".cc", "primeSK.o", "-lomniORB4", "-lomnithread")...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Programs{Dir: dir, Server: filepath.Join(dir, "prime_server"), Client: filepath.Join(dir, "prime_client")}, nil
}

// Cached builds the programs into a directory of cache named after a hash
// of the sources and the toolchain's paths, or reuses a build already
// there: sources that change get a new directory. The build happens in a
// temporary directory renamed into place, so that a build interrupted or
// run concurrently never leaves half a program behind.
func Cached(ctx context.Context, cache string) (*Programs, error) {
	if _, err := Check(); err != nil {
		return nil, err
	}
	key, err := sourcesKey()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, "omniorb-"+key)
	p := &Programs{Dir: dir, Server: filepath.Join(dir, "prime_server"), Client: filepath.Join(dir, "prime_client")}
	if executable(p.Server) && executable(p.Client) {
		return p, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, fmt.Errorf("omniorb: build cache: %w", err)
	}
	tmp, err := os.MkdirTemp(cache, "build-")
	if err != nil {
		return nil, fmt.Errorf("omniorb: build cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := Build(ctx, tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Built meanwhile by another process: use theirs.
		if executable(p.Server) && executable(p.Client) {
			return p, nil
		}
		return nil, fmt.Errorf("omniorb: build cache: %w", err)
	}
	return p, nil
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// sourcesKey is a short hash of the embedded sources.
func sourcesKey() (string, error) {
	h := sha256.New()
	entries, err := fs.ReadDir(Sources, ".")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(Sources, e.Name())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
