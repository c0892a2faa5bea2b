//go:build !linux

package lease

import "time"

var monoBase = time.Now()

func clockNow() time.Duration { return time.Since(monoBase) }
