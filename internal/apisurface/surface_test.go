// Package apisurface holds the test that keeps lockwatch's public API
// small and deliberate.
package apisurface

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budget is the most exported identifiers the public packages may have
// together: the everyday path, the fenced stores, the middleware (with
// WriteError, a handler's answer in the middleware's terms) and the
// operators' views (Snapshot, Inspect, ForceRelease, the live page), not
// the plumbing between lockwatch's own packages. Each constructor takes
// one config struct, not functional options.
const budget = 111

// public are the packages a user imports, relative to the module root.
var public = []string{"lease", "fence", "middleware", "telemetry", "telemetry/otelsetup", "debugpage"}

// ownBudgets are the public packages above the lease, and the test kit,
// each with a budget of its own (not counted in budget): a primitive a
// user learns by itself keeps a surface of its own size.
var ownBudgets = map[string]int{"election": 25, "permits": 25, "lockwatchtest": 10}

var update = flag.Bool("update", false, "rewrite api.txt from the code")

// TestSurface: the exported identifiers (top-level consts, vars, types and
// funcs, and the exported methods of exported types) are those listed in
// api.txt, and at most budget (ownBudgets: at most their own). A change to
// the API is a change to api.txt, made on purpose with -update and seen in
// review.
func TestSurface(t *testing.T) {
	var got, all []string
	for _, dir := range public {
		got = append(got, exported(t, filepath.Join("..", "..", dir), dir)...)
	}
	all = append(all, got...)
	for dir, limit := range ownBudgets {
		own := exported(t, filepath.Join("..", "..", dir), dir)
		assert.LessOrEqual(t, len(own), limit, "exported identifiers of %s", dir)
		all = append(all, own...)
	}
	slices.Sort(all)
	text := strings.Join(all, "\n") + "\n"
	if *update {
		require.NoError(t, os.WriteFile("api.txt", []byte(text), 0o644))
	}
	want, err := os.ReadFile("api.txt")
	require.NoError(t, err)
	assert.Equal(t, string(want), text, "the public API changed: run go test ./internal/apisurface -update and review api.txt")
	assert.LessOrEqual(t, len(got), budget, "exported identifiers")
}

// exported lists the exported identifiers of the package in dir, each as
// "pkg kind name".
func exported(t *testing.T, dir, pkg string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var files []*ast.File
	fset := token.NewFileSet()
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			require.NoError(t, err)
			files = append(files, f)
		}
	}
	require.NotEmpty(t, files, dir)
	types := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.IsExported() {
				types[ts.Name.Name] = true
			}
			return true
		})
	}
	var out []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					out = append(out, pkg+" func "+d.Name.Name)
				} else if recv := receiver(d.Recv.List[0].Type); types[recv] {
					out = append(out, pkg+" method "+recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							out = append(out, pkg+" type "+s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								out = append(out, pkg+" "+d.Tok.String()+" "+n.Name)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// receiver names a method's receiver type: T, *T, T[P] or *T[P].
func receiver(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if ix, ok := e.(*ast.IndexExpr); ok {
		e = ix.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
