package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

var versionCmd = &command{
	name:     "version",
	synopsis: "print lockwatch's version (also --version)",
	usage: `
Usage: lockwatch version

Prints the version of lockwatch's module, as go install stamped it (a
release tag, or a pseudo-version of a commit), and the Go release that
built it. A binary built from a work tree without version control shows
(devel), with the commit it was built from when known.

Exit statuses:
  0   printed
  64  usage error`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
		return func(args []string, stdout, _ io.Writer) error {
			if len(args) > 0 {
				return usageErr("version", "unexpected argument %q", args[0])
			}
			fmt.Fprintln(stdout, version())
			return nil
		}
	},
}

// version is the line lockwatch version prints.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "lockwatch (unknown version: built without module support)"
	}
	return formatVersion(bi)
}

// formatVersion names bi's main module version, and for a (devel) build
// the commit its version control settings name, if any: a (devel) alone
// tells an operator nothing about which code runs.
func formatVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "(devel)"
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			v += " commit " + rev[:min(len(rev), 12)]
		}
		if modified == "true" {
			v += " with local changes"
		}
	}
	return fmt.Sprintf("lockwatch %s (%s)", v, bi.GoVersion)
}
