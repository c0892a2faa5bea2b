package dashboards_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/lockwatch/lockwatch/dashboards"
)

// Generate returns each dashboard's JSON by file name; go generate writes
// them next to the package.
func ExampleGenerate() {
	files, err := dashboards.Generate()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Println(name)
	}
	// Output:
	// lock-detail.json
	// overview.json
}
