package permits

import (
	"errors"
	"fmt"
	"time"
)

// MaxLimit is the largest Config.Limit: a waiting Acquire queues on every
// permit of the key, so its cost grows with the limit.
const MaxLimit = 1024

// Config configures a Semaphore. Limit is required; every other field left
// zero takes the default its comment gives.
type Config struct {
	// Limit is how many permits the key has, 1 to MaxLimit: at most Limit
	// callers hold one at once, across every process that uses the key
	// with this limit. Callers of one key should pass the same limit; while
	// they differ (a rolling change), at most the largest hold at once
	// (the package doc, "Changing the limit").
	Limit int

	// Name is the lock name (lease.Config.Name) of the permits' leases, a
	// bounded telemetry label as everywhere in lockwatch, and the semaphore
	// label of its lockwatch_permits_* series. Default the key. The
	// semaphore records where its Locker does (lease.Config.Telemetry).
	Name string

	// Wait is how long Acquire waits for a permit when all are held, first
	// come, first served, and by its context. Default 0: fail fast with
	// lease.ErrNotAcquired.
	Wait time.Duration
}

// errInvalid is wrapped by every invalid-input error of the package.
var errInvalid = errors.New("permits: invalid")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalid, fmt.Sprintf(format, args...))
}

// withDefaults returns c with its defaults in, or why it is invalid.
func (c Config) withDefaults(key string) (Config, error) {
	switch {
	case c.Limit < 1 || c.Limit > MaxLimit:
		return c, invalidf("limit %d: must be 1 to %d", c.Limit, MaxLimit)
	case c.Wait < 0:
		return c, invalidf("negative wait %v", c.Wait)
	}
	if c.Name == "" {
		c.Name = key
	}
	return c, nil
}
