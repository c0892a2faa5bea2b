// Command gen writes the generated files of package alerts: the Prometheus
// rules, their promtool tests, the Grafana-managed rules and the
// Alertmanager example. go generate ./alerts/... runs it in alerts/.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/lockwatch/lockwatch/alerts"
)

func main() {
	dir := flag.String("dir", ".", "directory to write the files into")
	flag.Parse()

	files, err := alerts.Generate(alerts.Config{})
	if err != nil {
		log.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(*dir, name), data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
