package obs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEachSetListsEveryConstant reads sets.go: every constant declared with
// a closed-set type is in that type's list, once, so a new value cannot be
// left out of the series created at zero or of the dashboards.
func TestEachSetListsEveryConstant(t *testing.T) {
	lists := map[string]any{
		"AcquireResult": AcquireResults, "ResolutionResult": ResolutionResults,
		"RenewalResult": RenewalResults, "LossReason": LossReasons,
		"CommitResult": CommitResults, "ReleaseResult": ReleaseResults, "WaitResult": WaitResults,
		"FenceResult": FenceResults, "TermChange": TermChanges,
	}
	f, err := parser.ParseFile(token.NewFileSet(), "sets.go", nil, 0)
	require.NoError(t, err)
	declared := map[string][]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				_, listed := lists[s.Name.Name]
				assert.True(t, listed, "type %s has no list here", s.Name.Name)
			case *ast.ValueSpec:
				if id, ok := s.Type.(*ast.Ident); ok && g.Tok == token.CONST {
					for _, v := range s.Values {
						declared[id.Name] = append(declared[id.Name], v.(*ast.BasicLit).Value)
					}
				}
			}
		}
	}
	require.Len(t, declared, len(lists))
	for typ, list := range lists {
		var got []string
		l := reflect.ValueOf(list)
		for i := range l.Len() {
			got = append(got, `"`+l.Index(i).String()+`"`)
		}
		assert.ElementsMatch(t, declared[typ], got, typ)
	}
}
