package apisurface

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoInternalNames: no exported declaration of a public package names
// an identifier of an internal package (an alias, a defined type, a
// field, a parameter, a result, a constant's value): go doc and pkg.go.dev
// would show a name the user can neither import nor look up.
func TestNoInternalNames(t *testing.T) {
	dirs := append([]string{}, public...)
	for dir := range ownBudgets {
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		assert.Empty(t, internalNames(t, filepath.Join("..", "..", dir)), dir)
	}
}

// TestNoInternalNamesFinds: the check finds each kind of leak in a
// package made of them.
func TestNoInternalNamesFinds(t *testing.T) {
	assert.Equal(t, []string{
		"Alias: obs.LossReason", "Defined: obs.Telemetry", "Fields: obs.Recorder",
		"Func: obs.Config", "Func: obs.Recorder", "Fields.Method: obs.Recorder", "Value: obs.LossClosed",
	}, internalNames(t, filepath.Join("testdata", "leaky")))
}

// internalNames lists, as "declaration: pkg.Name", every name of an
// internal package in the exported declarations of the package in dir.
func internalNames(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		out = append(out, fileInternalNames(f)...)
	}
	return out
}

// fileInternalNames is internalNames for one file.
func fileInternalNames(f *ast.File) []string {
	internal := map[string]bool{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains("/"+path+"/", "/internal/") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		internal[name] = true
	}
	var out []string
	find := func(where string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.StructType:
				for _, fld := range n.Fields.List {
					if len(fld.Names) == 0 || fld.Names[0].IsExported() {
						ast.Inspect(fld.Type, inspector(internal, where, &out))
					}
				}
				return false // unexported fields: go doc hides them
			}
			return inspector(internal, where, &out)(n)
		})
	}
	for _, d := range f.Decls {
		exportedDecl(d, find)
	}
	return out
}

// inspector returns an ast.Inspect function that appends to out each
// selector of a package named in internal.
func inspector(internal map[string]bool, where string, out *[]string) func(ast.Node) bool {
	return func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok && internal[x.Name] {
				*out = append(*out, where+": "+x.Name+"."+s.Sel.Name)
			}
		}
		return true
	}
}

// exportedDecl calls find on each part of d that go doc shows: an
// exported func's or method's signature, an exported type's definition,
// an exported constant's or variable's type and value.
func exportedDecl(d ast.Decl, find func(where string, n ast.Node)) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return
		}
		where := d.Name.Name
		if d.Recv != nil {
			recv := receiver(d.Recv.List[0].Type)
			if !ast.IsExported(recv) {
				return
			}
			where = recv + "." + where
		}
		find(where, d.Type)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					find(s.Name.Name, s)
				}
			case *ast.ValueSpec:
				for i, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					if s.Type != nil {
						find(n.Name, s.Type)
					}
					if i < len(s.Values) {
						find(n.Name, s.Values[i])
					}
				}
			}
		}
	}
}
