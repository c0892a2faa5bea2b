package lease

import (
	_ "embed"

	"github.com/lockwatch/lockwatch/internal/script"
)

// One Lua script per operation, run through internal/script. The scripts
// that read or write the fence record start with record.lua, so the
// record's format is parsed and written in one place.
var (
	//go:embed scripts/record.lua
	recordSrc string
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/renew.lua
	renewSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/inspect.lua
	inspectSrc string
	//go:embed scripts/force.lua
	forceSrc string

	acquireScript = script.New(recordSrc + acquireSrc)
	renewScript   = script.New(recordSrc + renewSrc)
	releaseScript = script.New(recordSrc + releaseSrc)
	inspectScript = script.New(recordSrc + inspectSrc)
	forceScript   = script.New(recordSrc + forceSrc)
)
