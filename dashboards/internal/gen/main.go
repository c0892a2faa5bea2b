// Command gen writes lockwatch's Grafana dashboards, as built by
// dashboards.Generate, into a directory (by default the current one, which
// is dashboards/ under go generate). Run it with
//
//	go generate ./dashboards/...
//
// and commit the JSON it writes: a test fails when the committed files differ
// from a fresh generation.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockwatch/lockwatch/dashboards"
)

func main() {
	dir := flag.String("dir", ".", "directory to write the dashboards to")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := dashboards.Generate()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
