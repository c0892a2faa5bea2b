package debugpage

import (
	_ "embed"
	"html/template"
)

// pageHTML is the page's template: self-contained (inline CSS, no script,
// no external asset), so it works on an air-gapped host and under a
// Content-Security-Policy that forbids everything else.
//
//go:embed page.html
var pageHTML string

var page = template.Must(template.New("debugpage").Parse(pageHTML))
