package failpointbuild

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"strconv"

	"go.etcd.io/gofail/code"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
)

// rewrite returns src (the file named file, whose markers are ms) with its
// markers turned into code by gofail's rewriter, and the failpoints for
// its runtime binding. When a marker calls Kill and the file does not
// import package failpoint, the import is added on the package clause's
// line, so that line numbers stay those of the checkout.
func rewrite(file string, src []byte, ms []Marker) ([]byte, []*code.Failpoint, error) {
	var buf bytes.Buffer
	fps, err := code.ToFailpoints(&buf, bytes.NewReader(src))
	if err != nil {
		return nil, nil, fmt.Errorf("failpointbuild: %s: gofail: %w", file, err)
	}
	if len(fps) != len(ms) {
		return nil, nil, fmt.Errorf("failpointbuild: %s: gofail found %d failpoints, the marker check %d", file, len(fps), len(ms))
	}
	out := buf.Bytes()
	kill := false
	for _, m := range ms {
		kill = kill || m.Kill
	}
	if !kill {
		return out, fps, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ImportsOnly)
	if err != nil {
		return nil, nil, fmt.Errorf("failpointbuild: %w", err)
	}
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path != failpoint.ImportPath {
			continue
		}
		if imp.Name != nil && imp.Name.Name != "failpoint" {
			return nil, nil, fmt.Errorf("failpointbuild: %s: imports %s as %s, but markers call failpoint.Kill(): import it without a name", file, failpoint.ImportPath, imp.Name.Name)
		}
		return out, fps, nil
	}
	off := fset.Position(f.Name.End()).Offset
	if off > len(out) || !bytes.Equal(out[:off], src[:off]) {
		return nil, nil, fmt.Errorf("failpointbuild: %s: a failpoint marker before the package clause", file)
	}
	imp := "; import failpoint " + strconv.Quote(failpoint.ImportPath)
	res := make([]byte, 0, len(out)+len(imp))
	res = append(res, out[:off]...)
	res = append(res, imp...)
	res = append(res, out[off:]...)
	return res, fps, nil
}
