// Command failpointbuild builds fulcrum's failpoint binary by hand (see
// package failpointbuild):
//
//	go run ./internal/failpoint/cmd/failpointbuild -o /tmp/fulcrum-failpoint
//
// run from anywhere inside the checkout (or with -C DIR). It prints the
// failpoints the binary has, one per line with where it is, and the time
// the build took.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint/failpointbuild"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("o", "", "path of the failpoint binary to write (required)")
	dir := flag.String("C", ".", "a directory inside the fulcrum checkout to build from")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		return errors.New("usage: failpointbuild -o PATH [-C DIR]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = *dir
	gomod, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("failpointbuild: go env GOMOD in %s: %w", *dir, err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return fmt.Errorf("failpointbuild: %s is not inside a Go module", *dir)
	}
	root := filepath.Dir(mod)
	start := time.Now()
	ms, err := failpointbuild.Scan(ctx, root)
	if err != nil {
		return err
	}
	if err := failpointbuild.Build(ctx, root, *out); err != nil {
		return err
	}
	for _, m := range ms {
		fmt.Println(m)
	}
	fmt.Printf("built %s with %d failpoints in %v\n", *out, len(ms), time.Since(start).Round(time.Millisecond))
	return nil
}
