package failpointbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"go.etcd.io/gofail/code"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
)

// MainPackage is the package the failpoint binary is built from.
const MainPackage = "./cmd/fulcrum"

// BindingFile is the file Build adds to each package with failpoints: the
// gofail runtime's variables of its failpoints.
const BindingFile = "failpoints_gofail.go"

// listedPackage is what Build needs of `go list -json`.
type listedPackage struct {
	Dir, ImportPath, Name string
	Module                *struct{ Main bool }
	GoFiles, CgoFiles     []string
	CFiles, CXXFiles      []string
	HFiles, SFiles        []string
	SysoFiles, EmbedFiles []string
}

// sourceFiles are the files (relative to p.Dir) a build of p reads.
func (p *listedPackage) sourceFiles() []string {
	var fs []string
	for _, l := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles} {
		fs = append(fs, l...)
	}
	return fs
}

// goFiles are p's Go files (relative to p.Dir).
func (p *listedPackage) goFiles() []string {
	return append(append([]string(nil), p.GoFiles...), p.CgoFiles...)
}

// Build builds MainPackage of the module at repoRoot, with its failpoints,
// to outPath. It reads the checkout and writes only outPath and a
// temporary directory that it removes (see workDir). Concurrent Builds of
// one checkout, in one process or several, run one after the other. A
// malformed marker, a name used twice or a failed compilation is an error
// (with the go command's output).
func Build(ctx context.Context, repoRoot, outPath string) error {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return fmt.Errorf("failpointbuild: %w", err)
	}
	out, err := filepath.Abs(outPath)
	if err != nil {
		return fmt.Errorf("failpointbuild: %w", err)
	}
	pkgs, err := listPackages(ctx, root)
	if err != nil {
		return err
	}
	tmp, unlock, err := workDir(ctx, root)
	if err != nil {
		return err
	}
	defer unlock()
	defer os.RemoveAll(tmp)
	if _, err := prepare(root, tmp, pkgs); err != nil {
		return err
	}
	return goBuild(ctx, tmp, out)
}

// Scan returns the failpoints of the packages MainPackage is built from,
// checked as Build checks them (convention, unique names), without
// building anything. File is relative to repoRoot.
func Scan(ctx context.Context, repoRoot string) ([]Marker, error) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return nil, fmt.Errorf("failpointbuild: %w", err)
	}
	pkgs, err := listPackages(ctx, root)
	if err != nil {
		return nil, err
	}
	var all []Marker
	for _, p := range pkgs {
		ms, _, err := packageMarkers(root, p)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	if err := checkUnique(all); err != nil {
		return nil, err
	}
	return all, nil
}

// listPackages lists the module's packages that MainPackage and package
// failpoint (which only the rewritten files import) are built from.
func listPackages(ctx context.Context, root string) ([]*listedPackage, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json", MainPackage, failpoint.ImportPath)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("failpointbuild: go list in %s: %w\n%s", root, err, stderr.Bytes())
	}
	var pkgs []*listedPackage
	dec := json.NewDecoder(bytes.NewReader(stdout))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("failpointbuild: go list output: %w", err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("failpointbuild: package %s is in %s, outside the module root %s", p.ImportPath, p.Dir, root)
		}
		pkgs = append(pkgs, &p)
	}
	return pkgs, nil
}

// packageMarkers returns the markers of p's Go files (File relative to
// root) and those files' sources by name.
func packageMarkers(root string, p *listedPackage) ([]Marker, map[string][]byte, error) {
	var ms []Marker
	srcs := map[string][]byte{}
	for _, name := range p.goFiles() {
		path := filepath.Join(p.Dir, name)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("failpointbuild: %w", err)
		}
		if !bytes.Contains(src, []byte("gofail:")) {
			continue
		}
		rel, _ := filepath.Rel(root, path)
		fm, err := parseMarkers(rel, src)
		if err != nil {
			return nil, nil, err
		}
		if len(fm) > 0 {
			ms = append(ms, fm...)
			srcs[name] = src
		}
	}
	return ms, srcs, nil
}

// prepare copies pkgs' sources, go.mod and go.sum from root to dst,
// rewrites the files with markers there and writes each such package's
// BindingFile. It returns the markers.
func prepare(root, dst string, pkgs []*listedPackage) ([]Marker, error) {
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dst, f)); err != nil {
			return nil, err
		}
	}
	var all []Marker
	for _, p := range pkgs {
		rel, _ := filepath.Rel(root, p.Dir)
		for _, f := range p.sourceFiles() {
			if err := copyFile(filepath.Join(p.Dir, f), filepath.Join(dst, rel, f)); err != nil {
				return nil, err
			}
		}
		ms, srcs, err := packageMarkers(root, p)
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			continue
		}
		all = append(all, ms...)
		var fps []*code.Failpoint
		for _, name := range slices.Sorted(maps.Keys(srcs)) { // a binding the same each time: cache hits
			src := srcs[name]
			var fileMs []Marker
			for _, m := range ms {
				if m.File == filepath.Join(rel, name) {
					fileMs = append(fileMs, m)
				}
			}
			out, ffps, err := rewrite(filepath.Join(rel, name), src, fileMs)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dst, rel, name), out, 0o644); err != nil {
				return nil, fmt.Errorf("failpointbuild: %w", err)
			}
			fps = append(fps, ffps...)
		}
		if err := writeBinding(filepath.Join(dst, rel), p, fps); err != nil {
			return nil, err
		}
	}
	if err := checkUnique(all); err != nil {
		return nil, err
	}
	return all, nil
}

// writeBinding writes BindingFile of p into dir.
func writeBinding(dir string, p *listedPackage, fps []*code.Failpoint) error {
	path := filepath.Join(dir, BindingFile)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("failpointbuild: package %s has a file named %s, the name of the failpoint binding", p.ImportPath, BindingFile)
	}
	var buf bytes.Buffer
	if err := code.NewBinding(p.Name, fps).Write(&buf); err != nil {
		return fmt.Errorf("failpointbuild: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("failpointbuild: %w", err)
	}
	return nil
}

// copyFile copies src to dst, making dst's directory.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("failpointbuild: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("failpointbuild: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("failpointbuild: %w", err)
	}
	return nil
}

// goBuild builds MainPackage of the module in dir to out.
func goBuild(ctx context.Context, dir, out string) error {
	args := []string{"build", "-o", out, MainPackage}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("failpointbuild: go %s (in the rewritten copy): %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}
