// Package codeshape holds the test that keeps the library's code small
// and its comments lean: short functions of few parameters, doc comments
// that say the contract once, evenly wrapped, without their history.
// go test ./internal/codeshape -args -report prints every measure.
package codeshape

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

var report = flag.Bool("report", false, "print every measure, not only what is over its limit")

// library are the packages users import and the internal ones they load,
// relative to the module root: lockwatchtest, a module of its own, too.
var library = []string{
	"lease", "election", "fence", "middleware", "telemetry", "telemetry/otelsetup", "debugpage", "lockwatchtest",
	"internal/obs", "internal/script", "internal/leasekeys", "internal/groupcommit", "internal/clock",
}

// scripts are the directories of the library's Lua scripts.
var scripts = []string{"lease/scripts", "election", "fence/scripts"}

const (
	maxLines    = 50   // a function, func line to closing brace
	maxCyclo    = 15   // gocyclo's count
	maxParams   = 5    // receiver excluded
	maxDocLines = 20   // a doc comment, package docs excepted
	maxRatioGo  = 0.45 // comment lines per code line, package docs excluded
	maxRatioLua = 0.6
	wrapWidth   = 76 // a comment line that could have held the next word is ragged
)

type fn struct {
	where                string
	lines, cyclo, params int
}

func parseDir(t *testing.T, dir string) (*token.FileSet, []*ast.File, []string) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	var names []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		names = append(names, path)
	}
	return fset, files, names
}

func cyclo(body ast.Node) int {
	n := 1
	ast.Inspect(body, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

func funcs(fset *token.FileSet, f *ast.File) []fn {
	var out []fn
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		params := 0
		for _, p := range fd.Type.Params.List {
			params += max(1, len(p.Names))
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			name = recvName(fd.Recv.List[0].Type) + "." + name
		}
		pos := fset.Position(fd.Pos())
		out = append(out, fn{
			where:  fmt.Sprintf("%s:%d %s", pos.Filename, pos.Line, name),
			lines:  fset.Position(fd.End()).Line - pos.Line + 1,
			cyclo:  cyclo(fd),
			params: params,
		})
	}
	return out
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// docs returns the doc comment groups of f's declarations, fields
// included, the package doc excluded.
func docs(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.GenDecl:
			out = append(out, x.Doc)
		case *ast.FuncDecl:
			out = append(out, x.Doc)
		case *ast.TypeSpec:
			out = append(out, x.Doc)
		case *ast.ValueSpec:
			out = append(out, x.Doc)
		case *ast.Field:
			out = append(out, x.Doc)
		}
		return true
	})
	return out
}

// lineCounts counts the comment and code lines of a source file, the
// package doc's lines excluded from the comments; prefix starts a comment
// line ("//" or "--").
func lineCounts(t *testing.T, path, prefix string, skip map[int]bool) (comments, code int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || skip[n]:
		case strings.HasPrefix(line, prefix):
			comments++
		default:
			code++
		}
	}
	return comments, code
}

var listItem = regexp.MustCompile(`^(- |\* |\d+\. |\(\w\) )`)

// ragged returns the lines of g's paragraphs that could have held the
// next line's first word within the paragraph's own widest line: the mark
// an edit leaves when it shortens a line and does not rewrap.
func ragged(fset *token.FileSet, g *ast.CommentGroup) []int {
	var out []int
	for _, para := range paragraphs(g) {
		widest := 0
		for _, c := range para {
			widest = max(widest, utf8.RuneCountInString(c.Text))
		}
		for i := 0; i+1 < len(para); i++ {
			a, b := para[i].Text, para[i+1].Text[3:]
			if strings.HasSuffix(a, ":") || listItem.MatchString(b) {
				continue
			}
			word, _, _ := strings.Cut(b, " ")
			if utf8.RuneCountInString(a)+1+utf8.RuneCountInString(word) <= widest {
				out = append(out, fset.Position(para[i].Pos()).Line)
			}
		}
	}
	return out
}

// paragraphs splits g into runs of prose lines: a blank comment line or an
// indented one (code, a table) ends a run.
func paragraphs(g *ast.CommentGroup) [][]*ast.Comment {
	var out [][]*ast.Comment
	var cur []*ast.Comment
	for _, c := range g.List {
		if !strings.HasPrefix(c.Text, "// ") || strings.HasPrefix(c.Text, "//  ") {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, c)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// scars are phrases that tell a comment's history instead of the code's
// contract.
var scars = regexp.MustCompile(`(?i)\b(no longer|used to|previously|formerly|was renamed|issue \d+|last round|this round|the (first|second) review)\b`)

func TestShape(t *testing.T) {
	base := filepath.Join("..", "..")
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	var all []fn
	for _, pkg := range library {
		fset, files, names := parseDir(t, filepath.Join(base, pkg))
		comments, code := 0, 0
		for i, f := range files {
			all = append(all, funcs(fset, f)...)
			skip := map[int]bool{}
			if f.Doc != nil {
				for l := fset.Position(f.Doc.Pos()).Line; l <= fset.Position(f.Doc.End()).Line; l++ {
					skip[l] = true
				}
			}
			c, k := lineCounts(t, names[i], "//", skip)
			comments, code = comments+c, code+k
			for _, g := range docs(f) {
				if g == nil {
					continue
				}
				pos := fset.Position(g.Pos())
				if n := fset.Position(g.End()).Line - pos.Line + 1; n > maxDocLines {
					fail("doc comment of %d lines (limit %d): %s:%d", n, maxDocLines, pos.Filename, pos.Line)
				}
			}
			for _, g := range f.Comments {
				for _, l := range ragged(fset, g) {
					fail("ragged wrap: %s:%d", names[i], l)
				}
				for _, c := range g.List {
					if m := scars.FindString(c.Text); m != "" {
						fail("history in a comment (%q): %s", m, fset.Position(c.Pos()))
					}
				}
			}
		}
		ratio := float64(comments) / float64(code)
		if *report || ratio > maxRatioGo {
			fail("%s: %.2f comment lines per code line (%d/%d, limit %.2f)", pkg, ratio, comments, code, maxRatioGo)
		}
	}
	for _, dir := range scripts {
		paths, _ := filepath.Glob(filepath.Join(base, dir, "*.lua"))
		comments, code := 0, 0
		for _, p := range paths {
			c, k := lineCounts(t, p, "--", nil)
			comments, code = comments+c, code+k
		}
		ratio := float64(comments) / float64(code)
		if *report || ratio > maxRatioLua {
			fail("%s: %.2f comment lines per code line (%d/%d, limit %.2f)", dir, ratio, comments, code, maxRatioLua)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].lines > all[j].lines })
	for _, f := range all {
		over := f.lines > maxLines || f.cyclo > maxCyclo || f.params > maxParams
		if over || (*report && f.lines > 35) {
			fail("%s: %d lines, cyclomatic %d, %d parameters", f.where, f.lines, f.cyclo, f.params)
		}
	}
	for _, f := range failures {
		t.Error(f)
	}
}
