//go:build !linux

package clock

import "time"

var monoBase = time.Now()

func clockNow() time.Duration { return time.Since(monoBase) }
