package obs

import "runtime/debug"

// Version is the scope's version: the version of lockwatch's module the
// program was built with, as its build information records it, so that no
// release has to remember to change a constant. A build of lockwatch's own
// module (its tests, a clone's go run) reports "(devel)".
var Version = func() string {
	info, _ := debug.ReadBuildInfo()
	return moduleVersion(info)
}()

// moduleVersion finds lockwatch's module in info: the main module or a
// dependency, through its replacement if it has one.
func moduleVersion(info *debug.BuildInfo) string {
	if info == nil {
		return "(devel)"
	}
	mods := append([]*debug.Module{&info.Main}, info.Deps...)
	for _, m := range mods {
		if m.Path != ScopeName {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		if m.Version != "" {
			return m.Version
		}
	}
	return "(devel)"
}
