// Command gen writes lockwatch's Kubernetes objects, as built by
// kubernetes.Generate: the PrometheusRule (prometheusrule.yaml) and the
// dashboard ConfigMaps (dashboards-configmap.yaml). go generate
// ./kubernetes/... runs it in kubernetes/ with the default flags, which
// give the committed files. For your own namespace and job:
//
//	go run ./kubernetes/gen -namespace prod -job-selector 'job="payments"' -out ./deploy
//
// Flags:
//
//	-namespace NS      namespace of every object (default monitoring)
//	-job-selector SEL  label matchers added to every rule's selectors (default job=~".+")
//	-label KEY=VALUE   a label for every object, e.g. the one your Prometheus's
//	                   ruleSelector matches; repeat for more
//	-folder NAME       the dashboards' grafana_folder annotation (default lockwatch)
//	-out DIR           directory to write into, created if missing (default ".",
//	                   which is kubernetes/ under go generate)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockwatch/lockwatch/alerts"

	"github.com/lockwatch/lockwatch/kubernetes"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gen:", err)
		}
		os.Exit(2)
	}
}

// run parses the flags, generates and writes the files.
func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	namespace := fs.String("namespace", kubernetes.DefaultNamespace, "namespace of every object")
	jobSelector := fs.String("job-selector", alerts.DefaultJobSelector, "label matchers added to every series selector of the rules, e.g. job=\"payments\"")
	folder := fs.String("folder", kubernetes.DefaultFolder, "Grafana folder of the dashboards (the grafana_folder annotation)")
	out := fs.String("out", ".", "directory to write the files into (created if missing)")
	labels := labelFlag{}
	fs.Var(labels, "label", "KEY=VALUE label for every object, e.g. release=kube-prometheus-stack for a Prometheus ruleSelector; repeatable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	case strings.TrimSpace(*namespace) == "":
		return errors.New("-namespace must not be empty")
	case strings.TrimSpace(*jobSelector) == "":
		return errors.New("-job-selector must not be empty (the default, " + alerts.DefaultJobSelector + ", selects every job)")
	case strings.TrimSpace(*folder) == "":
		return errors.New("-folder must not be empty")
	case *out == "":
		return errors.New("-out must not be empty")
	}

	files, err := kubernetes.Generate(kubernetes.Config{
		Namespace:   *namespace,
		JobSelector: *jobSelector,
		Labels:      labels,
		Folder:      *folder,
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(*out, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// labelFlag collects -label KEY=VALUE flags.
type labelFlag map[string]string

func (l labelFlag) String() string {
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

func (l labelFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}
	if _, dup := l[k]; dup {
		return fmt.Errorf("label %s given twice", k)
	}
	l[k] = v
	return nil
}
